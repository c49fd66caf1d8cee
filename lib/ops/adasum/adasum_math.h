// The arithmetic of one Adasum combination, on host memory. Two gradients a and b
// combine into
//     (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
// which is a + b when they are orthogonal and their average when they are parallel
// (Maleki et al., "Scaling Distributed Training with Adaptive Summation", MLSys 2021).
// Dot products and norms accumulate in double whatever the element type, so that
// float16 values near the smallest normal neither underflow nor overflow on the way.
#pragma once

#include <cstdint>

#include "hvd/hvd.h"

namespace hvd {

// The element types Adasum is defined for: float16, bfloat16, float32, float64.
bool adasum_supports(hvd_dtype_t dtype);

// Partial sums over one slice of the two gradients; summed over every rank holding a
// slice of the same tensor before the coefficients are taken.
struct DotNorms {
  double dot = 0;  // a.b
  double aa = 0;   // |a|^2
  double bb = 0;   // |b|^2
};
DotNorms dot_and_norms(const void* a, const void* b, int64_t count, hvd_dtype_t dtype);

// The two coefficients of the combination from the whole tensors' sums. A gradient
// whose squared norm is below sqrt(DBL_MIN) (zero: a joined rank, a frozen layer)
// keeps the other's coefficient at 1, so the result is the other gradient unchanged.
struct AdasumCoefficients {
  double a = 1;
  double b = 1;
};
AdasumCoefficients adasum_coefficients(const DotNorms& whole);

// a[i] = ca * a[i] + cb * b[i] (computed in double, rounded once to the element type).
void scaled_add(void* a, double ca, const void* b, double cb, int64_t count, hvd_dtype_t dtype);

}  // namespace hvd
