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

// The integer dtype an AVERAGE over `divisor` ranks is summed in: a sum of small
// integers overflows its dtype long before their mean does (int8 {100, 100}: 200), so
// uint8, int8, uint16 and int16 are summed in int32 (int64 from 32768 ranks on) and
// int32 in int64. int64 is summed in int64: its sum must fit, as a SUM's must. dtype
// itself for every other dtype, and for no division.
hvd_dtype_t average_wire_dtype(hvd_dtype_t dtype, int divisor);

// The fusion copies of an average summed in a wider integer (wire, from
// average_wire_dtype): copy_in_widened is copy_scaled into wire elements (the
// prescaled operand rounded to dtype first, as without widening); copy_out_narrowed is
// copy_averaged out of them (the sum divided in wire, truncating toward zero, then
// postscaled and stored in dtype). With wire == dtype they are those two copies.
void copy_in_widened(void* dst, hvd_dtype_t wire, const void* src, hvd_dtype_t dtype,
                     int64_t count, double factor);
void copy_out_narrowed(void* dst, hvd_dtype_t dtype, const void* src, hvd_dtype_t wire,
                       int64_t count, int divisor, double factor);

}  // namespace hvd
