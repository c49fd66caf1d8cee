// Shared by the gpu suite: skipping without a device, random tensors of every dtype,
// and host/device copies through the CUDA runtime.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "base/dtype.h"
#include "ops/device/device_runtime.h"

namespace hvd_test {

constexpr int kSkip = 77;

// Exits with the skip code when this process sees no CUDA device.
inline void require_device(const char* test) {
  std::string why;
  if (hvd::cuda_device_count(&why) == 0) {
    std::printf("%s: skipped: %s\n", test, why.c_str());
    std::exit(kSkip);
  }
}

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

#define CHECK_OK(expr)                                                           \
  do {                                                                           \
    ::hvd::Error check_err_ = (expr);                                            \
    if (!check_err_.ok()) {                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,         \
                   check_err_.message.c_str());                                  \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

#define CHECK_CUDA(expr) CHECK((expr) == cudaSuccess)

constexpr hvd_dtype_t kAllDtypes[] = {HVD_UINT8, HVD_INT8, HVD_UINT16, HVD_INT16,
                                      HVD_INT32, HVD_INT64, HVD_FLOAT16, HVD_BFLOAT16,
                                      HVD_FLOAT32, HVD_FLOAT64, HVD_BOOL};

// Small values so that sums and products over a few ranks are exact in every dtype.
inline std::vector<unsigned char> random_tensor(hvd_dtype_t dtype, int64_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(-3, 3);
  const size_t esize = hvd::dtype_size(dtype);
  std::vector<unsigned char> out(static_cast<size_t>(count) * esize);
  for (int64_t i = 0; i < count; ++i) {
    int v = dist(gen);
    unsigned char* p = out.data() + i * esize;
    switch (dtype) {
      case HVD_UINT8: { uint8_t x = static_cast<uint8_t>(v + 3); std::memcpy(p, &x, 1); break; }
      case HVD_INT8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
      case HVD_UINT16: { uint16_t x = static_cast<uint16_t>(v + 3); std::memcpy(p, &x, 2); break; }
      case HVD_INT16: { int16_t x = static_cast<int16_t>(v); std::memcpy(p, &x, 2); break; }
      case HVD_INT32: { int32_t x = v; std::memcpy(p, &x, 4); break; }
      case HVD_INT64: { int64_t x = v; std::memcpy(p, &x, 8); break; }
      case HVD_FLOAT16: { uint16_t x = hvd::float_to_half(v * 0.5f); std::memcpy(p, &x, 2); break; }
      case HVD_BFLOAT16: { uint16_t x = hvd::float_to_bf16(v * 0.5f); std::memcpy(p, &x, 2); break; }
      case HVD_FLOAT32: { float x = v * 0.5f; std::memcpy(p, &x, 4); break; }
      case HVD_FLOAT64: { double x = v * 0.5; std::memcpy(p, &x, 8); break; }
      case HVD_BOOL: { uint8_t x = v > 0; std::memcpy(p, &x, 1); break; }
    }
  }
  return out;
}

inline void* to_device(const std::vector<unsigned char>& host) {
  void* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, host.empty() ? 1 : host.size()));
  if (!host.empty()) CHECK_CUDA(cudaMemcpy(d, host.data(), host.size(), cudaMemcpyHostToDevice));
  // cudaMemcpy from pageable memory may return before its DMA lands, and the library's
  // stream does not wait for the legacy stream unless a caller's stream is passed.
  CHECK_CUDA(cudaDeviceSynchronize());
  return d;
}

inline std::vector<unsigned char> to_host(const void* device, size_t bytes) {
  std::vector<unsigned char> out(bytes);
  if (bytes) CHECK_CUDA(cudaMemcpy(out.data(), device, bytes, cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace hvd_test
