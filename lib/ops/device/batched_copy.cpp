#include "ops/device/batched_copy.h"

#include <cstring>

#include "base/dtype.h"
#include "hvd_build_config.h"

#if HVD_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "ops/device/cuda_check.h"
#endif

namespace hvd {

BatchedCopier::BatchedCopier(void* stream) : stream_(stream), device_descs_(stream), timer_(stream) {}

#if HVD_HAVE_CUDA

BatchedCopier::~BatchedCopier() {
  if (uploaded_) {
    cudaEventSynchronize(static_cast<cudaEvent_t>(uploaded_));
    cudaEventDestroy(static_cast<cudaEvent_t>(uploaded_));
  }
}

Error BatchedCopier::copy(const std::vector<CopyItem>& items, hvd_dtype_t dtype, double factor,
                          int divisor) {
  if (!dtype_valid(dtype)) return make_error(HVD_ERR_INVALID_ARGUMENT, "invalid dtype %d", dtype);
  cudaStream_t stream = static_cast<cudaStream_t>(stream_);
  const bool plain = dtype == HVD_BOOL || (factor == 1.0 && divisor <= 1);
  const int64_t esize = static_cast<int64_t>(dtype_size(dtype));

  if (!copy_kernel_available()) {
    // Built without nvcc: plain copies still work, one cudaMemcpyAsync per tensor.
    if (!plain)
      return make_error(HVD_ERR_UNSUPPORTED,
                        "scaled device copies need the CUDA kernels, and this build of libhvd "
                        "was made without nvcc");
    timer_.start();
    for (const CopyItem& it : items)
      if (it.src != it.dst && it.count > 0)
        HVD_CUDA_CHECK(cudaMemcpyAsync(it.dst, it.src, static_cast<size_t>(it.count * esize),
                                       cudaMemcpyDeviceToDevice, stream));
    timer_.stop();
    return Error::success();
  }

  // Elements per chunk for this dtype: the kernel's plain path chunks bytes, its
  // scaled path elements; both give a descriptor the same number of chunks.
  const int64_t per_chunk = kCopyChunkBytes / esize;
  CopyTable table{};
  std::vector<CopyDesc> descs;
  descs.reserve(items.size());
  int64_t chunks = 0;
  for (const CopyItem& it : items) {
    if (it.count <= 0) continue;
    descs.push_back(CopyDesc{it.src, it.dst, it.count, chunks});
    chunks += (it.count + per_chunk - 1) / per_chunk;
  }
  if (descs.empty()) return Error::success();
  table.n = static_cast<int>(descs.size());
  table.total_chunks = chunks;
  timer_.start();  // the descriptors' upload is part of the copy
  if (descs.size() <= static_cast<size_t>(kInlineDescs)) {
    std::memcpy(table.inline_descs, descs.data(), descs.size() * sizeof(CopyDesc));
    table.descs = nullptr;
  } else {
    const size_t bytes = descs.size() * sizeof(CopyDesc);
    if (!uploaded_) {
      cudaEvent_t e;
      HVD_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      uploaded_ = e;
    }
    // The previous upload may still be reading the staging table.
    HVD_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(uploaded_)));
    Error err = host_descs_.reserve(bytes);
    if (!err.ok()) return err;
    err = device_descs_.reserve(bytes);
    if (!err.ok()) return err;
    std::memcpy(host_descs_.data(), descs.data(), bytes);
    HVD_CUDA_CHECK(cudaMemcpyAsync(device_descs_.data(), host_descs_.data(), bytes,
                                   cudaMemcpyHostToDevice, stream));
    HVD_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(uploaded_), stream));
    table.descs = static_cast<const CopyDesc*>(device_descs_.data());
  }
  int rc = launch_copy_kernel(table, dtype, factor, divisor, stream_);
  if (rc != cudaSuccess) return cuda_error(static_cast<cudaError_t>(rc), "the batched copy kernel launch");
  timer_.stop();
  ++launches_;
  return Error::success();
}

#else

BatchedCopier::~BatchedCopier() = default;

Error BatchedCopier::copy(const std::vector<CopyItem>&, hvd_dtype_t, double, int) {
  return make_error(HVD_ERR_CUDA, "device copies need CUDA, and this build of libhvd has none");
}

#endif

}  // namespace hvd
