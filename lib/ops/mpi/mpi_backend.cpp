#include "ops/mpi/mpi_backend.h"

#include <algorithm>
#include <climits>

#include "core/dtype.h"
#include "ops/mpi/mpi_types.h"

namespace hvd {

Error mpi_error(int code, const char* what) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(code, text, &len);
  return make_error(HVD_ERR_MPI, "%s failed: %s", what, text);
}

int64_t MpiBackend::chunk_elements(hvd_dtype_t dtype) const {
  int64_t n = chunk_bytes_ / static_cast<int64_t>(dtype_size(dtype));
  return std::clamp<int64_t>(n, 1, INT_MAX / 2);
}

Error MpiBackend::allreduce_on(MPI_Comm comm, const void* send, void* recv, int64_t count,
                               hvd_dtype_t dtype, hvd_reduce_op_t op,
                               std::atomic<uint64_t>* bytes) {
  const size_t esize = dtype_size(dtype);
  const int64_t chunk = chunk_elements(dtype);
  MPI_Datatype type = mpi_datatype(dtype);
  MPI_Op mpi_op = mpi_reduce_op(op, dtype);
  int size = 1;
  MPI_Comm_size(comm, &size);
  for (int64_t off = 0; off < count; off += chunk) {
    int n = static_cast<int>(std::min(chunk, count - off));
    char* out = static_cast<char*>(recv) + off * esize;
    const void* in = send == recv ? MPI_IN_PLACE : static_cast<const char*>(send) + off * esize;
    int rc = MPI_Allreduce(in, out, n, type, mpi_op, comm);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Allreduce");
  }
  // A ring allreduce sends 2 (n-1)/n of the buffer from each rank.
  if (bytes && size > 1)
    bytes->fetch_add(static_cast<uint64_t>(2.0 * (size - 1) / size * count * esize));
  return Error::success();
}

Error MpiBackend::allreduce(const void* send, void* recv, int64_t count, hvd_dtype_t dtype,
                            hvd_reduce_op_t op, const ProcessSet& set) {
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  return allreduce_on(set.comm, send, recv, count, dtype, op, &counters_->global_bytes);
}

Error MpiBackend::broadcast(void* buffer, int64_t count, hvd_dtype_t dtype, int root,
                            const ProcessSet& set) {
  counters_->collectives.fetch_add(1, std::memory_order_relaxed);
  const int64_t bytes = count * static_cast<int64_t>(dtype_size(dtype));
  const int64_t chunk = std::clamp<int64_t>(chunk_bytes_, 1, INT_MAX / 2);
  for (int64_t off = 0; off < bytes; off += chunk) {
    int n = static_cast<int>(std::min(chunk, bytes - off));
    int rc = MPI_Bcast(static_cast<char*>(buffer) + off, n, MPI_BYTE, root, set.comm);
    if (rc != MPI_SUCCESS) return mpi_error(rc, "MPI_Bcast");
  }
  if (set.my_set_rank == root)
    counters_->global_bytes.fetch_add(static_cast<uint64_t>(bytes), std::memory_order_relaxed);
  return Error::success();
}

}  // namespace hvd
