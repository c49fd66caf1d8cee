// CUDA runtime errors as Error values. Only for files built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include "base/error.h"

namespace hvd {

inline Error cuda_error(cudaError_t code, const char* what) {
  return make_error(HVD_ERR_CUDA, "%s failed: %s (%s)", what, cudaGetErrorString(code),
                    cudaGetErrorName(code));
}

}  // namespace hvd

// Returns an Error from the enclosing function when a CUDA call fails.
#define HVD_CUDA_CHECK(call)                                    \
  do {                                                          \
    cudaError_t hvd_cuda_rc_ = (call);                          \
    if (hvd_cuda_rc_ != cudaSuccess) return ::hvd::cuda_error(hvd_cuda_rc_, #call); \
  } while (0)
