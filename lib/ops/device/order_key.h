// MIN and MAX of floats on the device, made NaN-propagating and bitwise commutative
// as on the host (base/float_order.h). NCCL's float MIN and MAX are fminf and fmaxf:
// they drop a NaN operand (MIN of {NaN, 1} is 1). So the operand is turned into
// integer keys of the same width whose signed order is the floats' order, -0.0 below
// +0.0, with every NaN mapped to the key that wins (the lowest for MIN, the highest for
// MAX); the integers are reduced (NCCL, or the host-staged path for 16 bits) and the
// keys turned back, the winning NaN key into the canonical quiet NaN. Plain C++ so both
// compilers read it.
#pragma once

#include <cstdint>

#include "hvd/hvd.h"

namespace hvd {

// The integer dtype whose MIN or MAX carries a float MIN or MAX (HVD_INT16, HVD_INT32,
// HVD_INT64); dtype itself for any other dtype or op.
hvd_dtype_t order_key_dtype(hvd_dtype_t dtype, hvd_reduce_op_t op);

// Whether order_key_kernel.cu was built into this library.
bool order_key_kernel_available();

// In place on count elements of device memory, on stream (cudaStream_t): floats into
// keys (to_keys) or keys back into floats, for MIN (min) or MAX. Returns a cudaError_t.
int launch_order_keys(void* data, int64_t count, hvd_dtype_t dtype, bool min, bool to_keys,
                      void* stream);

}  // namespace hvd
