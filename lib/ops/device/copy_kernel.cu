// One kernel copies many tensors in one launch, with the fusion scaling folded in.
// Blocks take fixed-size chunks of the flattened list, find their descriptor by
// binary search over first_chunk, and copy with one thread per element (16-byte
// vectors for plain copies of aligned chunks).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "hvd/hvd.h"
#include "ops/device/copy_kernel.h"

namespace hvd {

namespace {

constexpr int kThreads = 256;

__device__ const CopyDesc& find_desc(const CopyTable& table, int64_t chunk) {
  const CopyDesc* descs = table.descs ? table.descs : table.inline_descs;
  int lo = 0, hi = table.n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (descs[mid].first_chunk <= chunk) lo = mid;
    else hi = mid - 1;
  }
  return descs[lo];
}

template <typename T>
struct Scale {
  double factor;
  int divisor;
  __device__ T operator()(T v) const {
    if (divisor > 1) v = static_cast<T>(v / static_cast<T>(divisor));
    if (factor != 1.0) v = static_cast<T>(static_cast<double>(v) * factor);
    return v;
  }
};

template <>
struct Scale<float> {
  float factor;
  __device__ float operator()(float v) const { return v * factor; }
};

template <>
struct Scale<double> {
  double factor;
  __device__ double operator()(double v) const { return v * factor; }
};

template <>
struct Scale<__half> {
  float factor;
  __device__ __half operator()(__half v) const { return __float2half_rn(__half2float(v) * factor); }
};

template <>
struct Scale<__nv_bfloat16> {
  float factor;
  __device__ __nv_bfloat16 operator()(__nv_bfloat16 v) const {
    return __float2bfloat16_rn(__bfloat162float(v) * factor);
  }
};

// An average without a factor: the sum / n rounded once, as on the host
// (fusion/scale.cpp); nvcc's division rounds once unless fast math is asked for.
template <typename T>
struct Average {
  T divisor;
  __device__ T operator()(T v) const { return v / divisor; }
};

template <typename T, typename Op>
__global__ void __launch_bounds__(kThreads)
scaled_copy(const __grid_constant__ CopyTable table, Op scale) {
  constexpr int64_t per_chunk = kCopyChunkBytes / static_cast<int64_t>(sizeof(T));
  for (int64_t chunk = blockIdx.x; chunk < table.total_chunks; chunk += gridDim.x) {
    const CopyDesc& d = find_desc(table, chunk);
    const int64_t begin = (chunk - d.first_chunk) * per_chunk;
    const int64_t end = min(d.count, begin + per_chunk);
    const T* src = static_cast<const T*>(d.src);
    T* dst = static_cast<T*>(d.dst);
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) dst[i] = scale(src[i]);
  }
}

__global__ void __launch_bounds__(kThreads)
plain_copy(const __grid_constant__ CopyTable table, int element_size) {
  for (int64_t chunk = blockIdx.x; chunk < table.total_chunks; chunk += gridDim.x) {
    const CopyDesc& d = find_desc(table, chunk);
    const int64_t bytes = d.count * element_size;
    const int64_t begin = (chunk - d.first_chunk) * kCopyChunkBytes;
    const int64_t end = min(bytes, begin + kCopyChunkBytes);
    const char* src = static_cast<const char*>(d.src) + begin;
    char* dst = static_cast<char*>(d.dst) + begin;
    const int64_t n = end - begin;
    if (src == dst) continue;
    if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | n) & 15) == 0) {
      const uint4* s = reinterpret_cast<const uint4*>(src);
      uint4* t = reinterpret_cast<uint4*>(dst);
      for (int64_t i = threadIdx.x; i < n / 16; i += kThreads) t[i] = s[i];
    } else if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) | n) & 3) == 0) {
      const uint32_t* s = reinterpret_cast<const uint32_t*>(src);
      uint32_t* t = reinterpret_cast<uint32_t*>(dst);
      for (int64_t i = threadIdx.x; i < n / 4; i += kThreads) t[i] = s[i];
    } else {
      for (int64_t i = threadIdx.x; i < n; i += kThreads) dst[i] = src[i];
    }
  }
}

template <typename T, typename Op>
cudaError_t launch(const CopyTable& table, Op op, cudaStream_t stream, unsigned grid) {
  scaled_copy<T, Op><<<grid, kThreads, 0, stream>>>(table, op);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_int(const CopyTable& table, double factor, int divisor, cudaStream_t stream,
                       unsigned grid) {
  return launch<T>(table, Scale<T>{factor, divisor}, stream, grid);
}

template <typename T, typename F>
cudaError_t launch_float(const CopyTable& table, F factor, cudaStream_t stream, unsigned grid) {
  return launch<T>(table, Scale<T>{factor}, stream, grid);
}

int element_size(int dtype) {
  switch (dtype) {
    case HVD_UINT8: case HVD_INT8: case HVD_BOOL: return 1;
    case HVD_UINT16: case HVD_INT16: case HVD_FLOAT16: case HVD_BFLOAT16: return 2;
    case HVD_INT32: case HVD_FLOAT32: return 4;
    default: return 8;
  }
}

}  // namespace

bool copy_kernel_available() { return true; }

int launch_copy_kernel(const CopyTable& table, int dtype, double factor, int divisor,
                       void* stream_ptr) {
  if (table.total_chunks <= 0) return cudaSuccess;
  cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);
  // Enough blocks to fill any current GPU several times over; the loop covers the rest.
  const unsigned grid = static_cast<unsigned>(table.total_chunks < 65536 ? table.total_chunks : 65536);
  if (dtype == HVD_BOOL || (factor == 1.0 && divisor <= 1)) {
    plain_copy<<<grid, kThreads, 0, stream>>>(table, element_size(dtype));
    return cudaGetLastError();
  }
  const double f = factor / (divisor > 1 ? divisor : 1);
  switch (dtype) {
    case HVD_UINT8: return launch_int<uint8_t>(table, factor, divisor, stream, grid);
    case HVD_INT8: return launch_int<int8_t>(table, factor, divisor, stream, grid);
    case HVD_UINT16: return launch_int<uint16_t>(table, factor, divisor, stream, grid);
    case HVD_INT16: return launch_int<int16_t>(table, factor, divisor, stream, grid);
    case HVD_INT32: return launch_int<int32_t>(table, factor, divisor, stream, grid);
    case HVD_INT64: return launch_int<int64_t>(table, factor, divisor, stream, grid);
    case HVD_FLOAT16: {
      // A user's factor multiplies as a half, as Horovod's kernels and torch's half
      // arithmetic do (half x half is exact in float, so this matches __hmul); the
      // average's 1/size stays in float.
      const float factor_as_half = __half2float(__float2half_rn(static_cast<float>(factor)));
      const float scale = divisor > 1 ? factor_as_half / static_cast<float>(divisor) : factor_as_half;
      return launch_float<__half>(table, scale, stream, grid);
    }
    case HVD_BFLOAT16: return launch_float<__nv_bfloat16>(table, static_cast<float>(f), stream, grid);
    case HVD_FLOAT32:
      if (factor == 1.0) return launch<float>(table, Average<float>{static_cast<float>(divisor)}, stream, grid);
      return launch_float<float>(table, static_cast<float>(f), stream, grid);
    case HVD_FLOAT64:
      if (factor == 1.0) return launch<double>(table, Average<double>{static_cast<double>(divisor)}, stream, grid);
      return launch_float<double>(table, f, stream, grid);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace hvd
