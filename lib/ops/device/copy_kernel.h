// The interface between the batched copy (batched_copy.cpp) and its CUDA kernel
// (copy_kernel.cu, built by nvcc). Plain C++ so both compilers read it.
#pragma once

#include <cstdint>

namespace hvd {

struct CopyDesc {
  const void* src;
  void* dst;
  int64_t count;        // elements
  int64_t first_chunk;  // chunks of the descriptors before this one
};

// Each thread block copies chunks of this many bytes; a descriptor owns
// ceil(count * element size / kCopyChunkBytes) chunks.
constexpr int64_t kCopyChunkBytes = 16384;
// Descriptors up to this many travel in the launch parameters (no upload).
constexpr int kInlineDescs = 64;

struct CopyTable {
  const CopyDesc* descs;  // device memory, or nullptr: use inline_descs
  int n;
  int64_t total_chunks;
  CopyDesc inline_descs[kInlineDescs];
};

// Whether copy_kernel.cu was built into this library.
bool copy_kernel_available();

// One launch on stream (cudaStream_t) over every descriptor; returns a cudaError_t.
// dtype is an hvd_dtype_t. As fusion/scale.h's copy_averaged, bit for bit (a float16
// factor is first rounded to a half): float32 and float64 without a factor:
// dst = src / divisor rounded once; other floating cases: dst = src * (factor /
// divisor); integers: dst = (src / divisor) * factor, truncating; bool: plain copy.
int launch_copy_kernel(const CopyTable& table, int dtype, double factor, int divisor,
                       void* stream);

}  // namespace hvd
