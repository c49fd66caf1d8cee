#include "ops/adasum/adasum_math.h"

#include <cfloat>
#include <cmath>

#include "base/dtype.h"

namespace hvd {

namespace {

// Element access in double for each supported type.
struct F16 {
  using T = uint16_t;
  static double get(T v) { return half_to_float(v); }
  static T put(double v) { return float_to_half(static_cast<float>(v)); }
};
struct BF16 {
  using T = uint16_t;
  static double get(T v) { return bf16_to_float(v); }
  static T put(double v) { return float_to_bf16(static_cast<float>(v)); }
};
template <typename F>
struct Native {
  using T = F;
  static double get(T v) { return static_cast<double>(v); }
  static T put(double v) { return static_cast<T>(v); }
};

template <typename E>
DotNorms dot_norms_loop(const void* a_, const void* b_, int64_t count) {
  const auto* a = static_cast<const typename E::T*>(a_);
  const auto* b = static_cast<const typename E::T*>(b_);
  DotNorms s;
  for (int64_t i = 0; i < count; ++i) {
    const double x = E::get(a[i]), y = E::get(b[i]);
    s.dot += x * y;
    s.aa += x * x;
    s.bb += y * y;
  }
  return s;
}

template <typename E>
void scaled_add_loop(void* a_, double ca, const void* b_, double cb, int64_t count) {
  auto* a = static_cast<typename E::T*>(a_);
  const auto* b = static_cast<const typename E::T*>(b_);
  for (int64_t i = 0; i < count; ++i) a[i] = E::put(ca * E::get(a[i]) + cb * E::get(b[i]));
}

}  // namespace

bool adasum_supports(hvd_dtype_t dtype) { return dtype_is_float(dtype); }

DotNorms dot_and_norms(const void* a, const void* b, int64_t count, hvd_dtype_t dtype) {
  switch (dtype) {
    case HVD_FLOAT16: return dot_norms_loop<F16>(a, b, count);
    case HVD_BFLOAT16: return dot_norms_loop<BF16>(a, b, count);
    case HVD_FLOAT32: return dot_norms_loop<Native<float>>(a, b, count);
    case HVD_FLOAT64: return dot_norms_loop<Native<double>>(a, b, count);
    default: return {};
  }
}

AdasumCoefficients adasum_coefficients(const DotNorms& whole) {
  static const double tiny = std::sqrt(DBL_MIN);
  AdasumCoefficients c;
  if (whole.aa >= tiny) c.a = 1.0 - whole.dot / whole.aa * 0.5;
  if (whole.bb >= tiny) c.b = 1.0 - whole.dot / whole.bb * 0.5;
  return c;
}

void scaled_add(void* a, double ca, const void* b, double cb, int64_t count, hvd_dtype_t dtype) {
  switch (dtype) {
    case HVD_FLOAT16: return scaled_add_loop<F16>(a, ca, b, cb, count);
    case HVD_BFLOAT16: return scaled_add_loop<BF16>(a, ca, b, cb, count);
    case HVD_FLOAT32: return scaled_add_loop<Native<float>>(a, ca, b, cb, count);
    case HVD_FLOAT64: return scaled_add_loop<Native<double>>(a, ca, b, cb, count);
    default: return;
  }
}

}  // namespace hvd
