#include "ops/device/staged_backend.h"

#include <algorithm>

#include "base/dtype.h"
#include "hvd_build_config.h"

#if HVD_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "ops/device/cuda_check.h"
#endif

namespace hvd {

namespace {

int64_t extent(const std::vector<int64_t>& counts, const std::vector<int64_t>& displs) {
  int64_t end = 0;
  for (size_t i = 0; i < counts.size() && i < displs.size(); ++i)
    end = std::max(end, displs[i] + counts[i]);
  return end;
}

int64_t sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

}  // namespace

#if HVD_HAVE_CUDA

Error StagedBackend::to_host(void* host, const void* device, size_t bytes) {
  if (bytes == 0) return Error::success();
  HVD_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost,
                                 static_cast<cudaStream_t>(device_->stream())));
  return Error::success();
}

Error StagedBackend::to_device(void* device, const void* host, size_t bytes) {
  if (bytes == 0) return Error::success();
  // Queued, not awaited: the next operation's copy to the host is queued behind it
  // on the same stream, so the staging buffer is not overwritten early.
  HVD_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice,
                                 static_cast<cudaStream_t>(device_->stream())));
  return Error::success();
}

Error StagedBackend::wait() { return device_->synchronize(); }

#else

Error StagedBackend::to_host(void*, const void*, size_t) {
  return make_error(HVD_ERR_CUDA, "this build of libhvd has no CUDA support");
}
Error StagedBackend::to_device(void*, const void*, size_t) {
  return make_error(HVD_ERR_CUDA, "this build of libhvd has no CUDA support");
}
Error StagedBackend::wait() { return make_error(HVD_ERR_CUDA, "this build of libhvd has no CUDA support"); }

#endif

Error StagedBackend::allreduce(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                               hvd_reduce_op_t op, const Communicator& comm) {
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  HVD_RETURN_IF_ERROR(staging_.reserve(bytes));
  HVD_RETURN_IF_ERROR(to_host(staging_.data(), send, bytes));
  HVD_RETURN_IF_ERROR(wait());
  HVD_RETURN_IF_ERROR(host_->allreduce(staging_.data(), staging_.data(), count, dtype, op, comm));
  return to_device(recv, staging_.data(), bytes);
}

Error StagedBackend::broadcast(void* buffer, int64_t count, hvd_dtype_t dtype, int root,
                               const Communicator& comm) {
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  HVD_RETURN_IF_ERROR(staging_.reserve(bytes));
  const bool is_root = comm.rank == root;
  if (is_root) {
    HVD_RETURN_IF_ERROR(to_host(staging_.data(), buffer, bytes));
    HVD_RETURN_IF_ERROR(wait());
  }
  HVD_RETURN_IF_ERROR(host_->broadcast(staging_.data(), count, dtype, root, comm));
  return is_root ? Error::success() : to_device(buffer, staging_.data(), bytes);
}

Error StagedBackend::allgatherv(const void* send, void* recv, const std::vector<int64_t>& counts,
                                const std::vector<int64_t>& displs, hvd_dtype_t dtype,
                                const Communicator& comm) {
  const size_t esize = dtype_size(dtype);
  const size_t bytes = static_cast<size_t>(extent(counts, displs)) * esize;
  const int me = comm.rank;
  HVD_RETURN_IF_ERROR(staging_.reserve(bytes));
  char* host = static_cast<char*>(staging_.data());
  char* mine = host + displs[static_cast<size_t>(me)] * esize;
  HVD_RETURN_IF_ERROR(to_host(mine, send, static_cast<size_t>(counts[static_cast<size_t>(me)]) * esize));
  HVD_RETURN_IF_ERROR(wait());
  HVD_RETURN_IF_ERROR(host_->allgatherv(mine, host, counts, displs, dtype, comm));
  return to_device(recv, host, bytes);
}

Error StagedBackend::alltoallv(const void* send, const std::vector<int64_t>& send_counts,
                               const std::vector<int64_t>& send_displs, void* recv,
                               const std::vector<int64_t>& recv_counts,
                               const std::vector<int64_t>& recv_displs, hvd_dtype_t dtype,
                               int64_t largest_count, const Communicator& comm) {
  const size_t esize = dtype_size(dtype);
  const size_t send_bytes = static_cast<size_t>(extent(send_counts, send_displs)) * esize;
  const size_t recv_bytes = static_cast<size_t>(extent(recv_counts, recv_displs)) * esize;
  const size_t recv_offset = (send_bytes + 255) / 256 * 256;
  HVD_RETURN_IF_ERROR(staging_.reserve(recv_offset + recv_bytes));
  char* host = static_cast<char*>(staging_.data());
  HVD_RETURN_IF_ERROR(to_host(host, send, send_bytes));
  HVD_RETURN_IF_ERROR(wait());
  HVD_RETURN_IF_ERROR(host_->alltoallv(host, send_counts, send_displs, host + recv_offset, recv_counts,
                           recv_displs, dtype, largest_count, comm));
  return to_device(recv, host + recv_offset, recv_bytes);
}

Error StagedBackend::adasum(void* buffer, const std::vector<int64_t>& counts, hvd_dtype_t dtype,
                            const Communicator& comm) {
  const size_t bytes = static_cast<size_t>(sum(counts)) * dtype_size(dtype);
  HVD_RETURN_IF_ERROR(staging_.reserve(bytes));
  HVD_RETURN_IF_ERROR(to_host(staging_.data(), buffer, bytes));
  HVD_RETURN_IF_ERROR(wait());
  HVD_RETURN_IF_ERROR(host_->adasum(staging_.data(), counts, dtype, comm));
  return to_device(buffer, staging_.data(), bytes);
}

Error StagedBackend::reducescatter(const void* send, void* recv,
                                   const std::vector<int64_t>& counts, hvd_dtype_t dtype,
                                   hvd_reduce_op_t op, const Communicator& comm) {
  const size_t esize = dtype_size(dtype);
  const size_t send_bytes = static_cast<size_t>(sum(counts)) * esize;
  const size_t recv_bytes = static_cast<size_t>(counts[static_cast<size_t>(comm.rank)]) * esize;
  const size_t recv_offset = (send_bytes + 255) / 256 * 256;
  HVD_RETURN_IF_ERROR(staging_.reserve(recv_offset + recv_bytes));
  char* host = static_cast<char*>(staging_.data());
  HVD_RETURN_IF_ERROR(to_host(host, send, send_bytes));
  HVD_RETURN_IF_ERROR(wait());
  HVD_RETURN_IF_ERROR(host_->reducescatter(host, host + recv_offset, counts, dtype, op, comm));
  return to_device(recv, host + recv_offset, recv_bytes);
}

}  // namespace hvd
