// Element-wise copies with scaling folded in, for every dtype (16-bit floats through
// float32). They are the fusion copies: copy-in applies the prescale factor, copy-out
// the average divisor and the postscale factor.
#pragma once

#include <cstdint>

#include "hvd/hvd.h"

namespace hvd {

// dst = src * factor (dst == src allowed; factor 1 is a plain copy).
void copy_scaled(void* dst, const void* src, int64_t count, hvd_dtype_t dtype, double factor);

// dst = src / divisor * factor: without a factor, float32 and float64 are src / divisor
// rounded once (as torch's t / n); otherwise floats take one multiply by
// factor / divisor; integers a truncating division first, so an average of integers is
// exact.
void copy_averaged(void* dst, const void* src, int64_t count, hvd_dtype_t dtype, int divisor,
                   double factor);

}  // namespace hvd
