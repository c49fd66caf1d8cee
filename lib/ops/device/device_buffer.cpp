#include "ops/device/device_buffer.h"

#include <algorithm>

#include "hvd_build_config.h"

#if HVD_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "ops/device/cuda_check.h"
#endif

namespace hvd {

namespace {

// Round up to 1 MiB (or 2x for small sizes) so that a slowly growing tensor set does
// not reallocate each step.
[[maybe_unused]] size_t grown(size_t bytes) {
  constexpr size_t kMiB = 1 << 20;
  return bytes < kMiB ? std::max<size_t>(bytes * 2, 4096) : (bytes + kMiB - 1) / kMiB * kMiB;
}

}  // namespace

#if HVD_HAVE_CUDA

DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFreeAsync(data_, static_cast<cudaStream_t>(stream_));
}

Error DeviceBuffer::reserve(size_t bytes) {
  if (bytes <= size_) return Error::success();
  const size_t want = grown(bytes);
  cudaStream_t stream = static_cast<cudaStream_t>(stream_);
  if (data_) {
    HVD_CUDA_CHECK(cudaFreeAsync(data_, stream));
    data_ = nullptr;
    size_ = 0;
  }
  cudaError_t rc = cudaMallocAsync(&data_, want, stream);
  if (rc != cudaSuccess) {
    data_ = nullptr;
    cudaGetLastError();
    return make_error(rc == cudaErrorMemoryAllocation ? HVD_ERR_NO_MEMORY : HVD_ERR_CUDA,
                      "cannot allocate %zu bytes of device memory: %s", want, cudaGetErrorString(rc));
  }
  size_ = want;
  return Error::success();
}

PinnedBuffer::~PinnedBuffer() {
  if (data_) cudaFreeHost(data_);
}

Error PinnedBuffer::reserve(size_t bytes) {
  if (bytes <= size_) return Error::success();
  const size_t want = grown(bytes);
  if (data_) {
    HVD_CUDA_CHECK(cudaFreeHost(data_));
    data_ = nullptr;
    size_ = 0;
  }
  cudaError_t rc = cudaMallocHost(&data_, want);
  if (rc != cudaSuccess) {
    data_ = nullptr;
    cudaGetLastError();
    return make_error(rc == cudaErrorMemoryAllocation ? HVD_ERR_NO_MEMORY : HVD_ERR_CUDA,
                      "cannot allocate %zu bytes of pinned host memory: %s", want, cudaGetErrorString(rc));
  }
  size_ = want;
  return Error::success();
}

#else

DeviceBuffer::~DeviceBuffer() = default;
Error DeviceBuffer::reserve(size_t bytes) {
  return make_error(HVD_ERR_CUDA, "cannot allocate %zu bytes of device memory: no CUDA support", bytes);
}
PinnedBuffer::~PinnedBuffer() = default;
Error PinnedBuffer::reserve(size_t bytes) {
  return make_error(HVD_ERR_CUDA, "cannot allocate %zu bytes of pinned memory: no CUDA support", bytes);
}

#endif

}  // namespace hvd
