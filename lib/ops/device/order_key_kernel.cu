// The key passes of ops/device/order_key.h: one thread per element, in place.
#include <cuda_runtime.h>

#include <type_traits>

#include "base/float_order.h"
#include "ops/device/order_key.h"

namespace hvd {

namespace {

constexpr int kThreads = 256;

// A signed key: the unsigned order key (base/float_order.h) with its top bit flipped,
// so that signed comparison orders it. A NaN becomes the lowest key (MIN) or the
// highest (MAX); those are NaN bit patterns themselves, so no number maps to them.
template <typename F, typename S>
__device__ S to_key(typename F::Bits x, bool min) {
  using U = typename F::Bits;
  if (bits_are_nan<F>(x)) {
    const U extreme = min ? static_cast<U>(0) : static_cast<U>(~static_cast<U>(0));
    return static_cast<S>(static_cast<U>(extreme ^ F::kSign));
  }
  return static_cast<S>(static_cast<U>(order_key<F>(x) ^ F::kSign));
}

template <typename F, typename S>
__device__ typename F::Bits from_key(S key, bool min) {
  using U = typename F::Bits;
  const U k = static_cast<U>(static_cast<U>(key) ^ F::kSign);  // the unsigned order key
  const U nan_key = min ? static_cast<U>(0) : static_cast<U>(~static_cast<U>(0));
  if (k == nan_key) return F::kCanonicalNan;
  return (k & F::kSign) ? static_cast<U>(k & static_cast<U>(~F::kSign)) : static_cast<U>(~k);
}

template <typename F, typename S>
__global__ void order_keys(void* data, int64_t count, bool min, bool to_keys) {
  using U = typename F::Bits;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  if (to_keys) {
    U* p = static_cast<U*>(data);
    reinterpret_cast<S*>(p)[i] = to_key<F, S>(p[i], min);
  } else {
    S* p = static_cast<S*>(data);
    reinterpret_cast<U*>(p)[i] = from_key<F, S>(p[i], min);
  }
}

template <typename F, typename S>
int launch(void* data, int64_t count, bool min, bool to_keys, cudaStream_t stream) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  order_keys<F, S><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(data, count, min, to_keys);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

bool order_key_kernel_available() { return true; }

int launch_order_keys(void* data, int64_t count, hvd_dtype_t dtype, bool min, bool to_keys,
                      void* stream) {
  if (count <= 0) return cudaSuccess;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case HVD_FLOAT16: return launch<Float16Bits, int16_t>(data, count, min, to_keys, s);
    case HVD_BFLOAT16: return launch<Bfloat16Bits, int16_t>(data, count, min, to_keys, s);
    case HVD_FLOAT32: return launch<Float32Bits, int32_t>(data, count, min, to_keys, s);
    case HVD_FLOAT64: return launch<Float64Bits, int64_t>(data, count, min, to_keys, s);
    default: return cudaSuccess;
  }
}

}  // namespace hvd
