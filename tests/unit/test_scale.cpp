// The fusion copies (fusion/scale.h), compiled vectorized: for every dtype, counts
// that leave a remainder after any vector width, unaligned starts, in place and out of
// place, each element equal bit for bit to the one-element formula the header states.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "base/dtype.h"
#include "fusion/scale.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

namespace {

constexpr int64_t kCounts[] = {1, 3, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 1000, 1031};
constexpr int64_t kOffsets[] = {0, 1, 3};  // elements: the copies' starts are unaligned
constexpr double kFactors[] = {1.0, 0.5, 0.1, 3.0};
constexpr int kDivisors[] = {1, 2, 3, 7};

// Element i of a source: varied values, negatives included where the type has them.
template <typename T>
T source_value(int64_t i) {
  const double v = static_cast<double>((i * 37) % 101) - (std::is_signed_v<T> ? 50.0 : 0.0);
  return static_cast<T>(std::is_floating_point_v<T> ? v * 0.37 : v);
}

// What the header promises for one element.
template <typename T>
T scaled(T x, double factor) {
  if (factor == 1.0) return x;
  if constexpr (std::is_same_v<T, float>) return x * static_cast<float>(factor);
  return static_cast<T>(static_cast<double>(x) * factor);
}

template <typename T>
T averaged(T x, int divisor, double factor) {
  if (divisor <= 1) return scaled(x, factor);
  // IEEE division rounds once: the divisor is exact in either type.
  if constexpr (std::is_floating_point_v<T>) {
    if (factor == 1.0) return x / static_cast<T>(divisor);
    return scaled(x, factor / divisor);
  }
  const T quotient = static_cast<T>(x / static_cast<T>(divisor));
  return factor == 1.0 ? quotient : static_cast<T>(static_cast<double>(quotient) * factor);
}

template <typename T>
void check_type(hvd_dtype_t dtype) {
  for (int64_t count : kCounts)
    for (int64_t offset : kOffsets) {
      std::vector<T> src(static_cast<size_t>(count + offset)), dst(src.size());
      for (int64_t i = 0; i < count; ++i) src[static_cast<size_t>(offset + i)] = source_value<T>(i);
      T* s = src.data() + offset;
      T* d = dst.data() + offset;
      for (double factor : kFactors) {
        hvd::copy_scaled(d, s, count, dtype, factor);
        for (int64_t i = 0; i < count; ++i) {
          const T want = scaled(s[i], factor);
          assert_memory_equal(&d[i], &want, sizeof(T));
        }
        for (int divisor : kDivisors) {
          hvd::copy_averaged(d, s, count, dtype, divisor, factor);
          for (int64_t i = 0; i < count; ++i) {
            const T want = averaged(s[i], divisor, factor);
            assert_memory_equal(&d[i], &want, sizeof(T));
          }
        }
      }
      // In place: the buffer scaled where it is, as bucket views are.
      std::vector<T> in_place(src);
      hvd::copy_averaged(in_place.data() + offset, in_place.data() + offset, count, dtype, 2,
                         0.5);
      for (int64_t i = 0; i < count; ++i) {
        const T want = averaged(s[i], 2, 0.5);
        assert_memory_equal(&in_place[static_cast<size_t>(offset + i)], &want, sizeof(T));
      }
    }
}

void every_type_matches_its_formula(void**) {
  check_type<uint8_t>(HVD_UINT8);
  check_type<int8_t>(HVD_INT8);
  check_type<uint16_t>(HVD_UINT16);
  check_type<int16_t>(HVD_INT16);
  check_type<int32_t>(HVD_INT32);
  check_type<int64_t>(HVD_INT64);
  check_type<float>(HVD_FLOAT32);
  check_type<double>(HVD_FLOAT64);
}

// 16-bit floats are scaled through float32 and rounded back once.
void half_precision_rounds_once(void**) {
  for (int64_t count : kCounts) {
    std::vector<uint16_t> half(static_cast<size_t>(count)), bf(half.size()), out(half.size());
    for (int64_t i = 0; i < count; ++i) {
      half[static_cast<size_t>(i)] = hvd::float_to_half(source_value<float>(i));
      bf[static_cast<size_t>(i)] = hvd::float_to_bf16(source_value<float>(i));
    }
    hvd::copy_averaged(out.data(), half.data(), count, HVD_FLOAT16, 2, 1.0);
    for (int64_t i = 0; i < count; ++i)
      assert_int_equal(out[static_cast<size_t>(i)],
                       hvd::float_to_half(hvd::half_to_float(half[static_cast<size_t>(i)]) * 0.5f));
    hvd::copy_scaled(out.data(), bf.data(), count, HVD_BFLOAT16, 3.0);
    for (int64_t i = 0; i < count; ++i)
      assert_int_equal(out[static_cast<size_t>(i)],
                       hvd::float_to_bf16(hvd::bf16_to_float(bf[static_cast<size_t>(i)]) * 3.0f));
  }
}

// An average is the sum / n rounded once, as torch's t / n: for float32 over every
// binade (subnormals, the largest values, signs, infinities and NaN kept), and n odd,
// even and large.
void float_averages_round_once(void**) {
  constexpr int kDivs[] = {3, 5, 6, 7, 9, 10, 12, 24, 100, 1000, 4095, 999999};
  std::vector<float> src, dst;
  uint32_t state = 12345;
  for (int i = 0; i < 1 << 20; ++i) {
    state = state * 1664525u + 1013904223u;  // every bit pattern is a float to try
    float x;
    std::memcpy(&x, &state, sizeof x);
    src.push_back(x);
  }
  src.insert(src.end(), {0.0f, -0.0f, 1e-45f, -1e-45f, 3.4028235e38f, -3.4028235e38f, INFINITY,
                         -INFINITY, 1.0f, 2.0f, 3.0f, 100.0f});
  dst.resize(src.size());
  for (int n : kDivs) {
    hvd::copy_averaged(dst.data(), src.data(), static_cast<int64_t>(src.size()), HVD_FLOAT32, n, 1.0);
    for (size_t i = 0; i < src.size(); ++i) {
      const float want = src[i] / static_cast<float>(n);
      if (std::isnan(want)) {
        assert_true(std::isnan(dst[i]));
        continue;
      }
      if (std::memcmp(&dst[i], &want, sizeof want) != 0)
        fail_msg("%a / %d: got %a, expected %a", static_cast<double>(src[i]), n,
                 static_cast<double>(dst[i]), static_cast<double>(want));
    }
  }
}

void booleans_are_copied(void**) {
  const uint8_t src[5] = {1, 0, 1, 1, 0};
  uint8_t dst[5] = {};
  hvd::copy_averaged(dst, src, 5, HVD_BOOL, 2, 0.5);
  assert_memory_equal(dst, src, sizeof(src));
}

// Integer averages summed in a wider integer: which one, and the copies in and out,
// each element as the header states (the operand prescaled and rounded in its dtype,
// the wide sum divided truncating, then postscaled into the dtype).
void wire_dtypes_hold_the_sums(void**) {
  assert_int_equal(hvd::average_wire_dtype(HVD_INT8, 2), HVD_INT32);
  assert_int_equal(hvd::average_wire_dtype(HVD_UINT16, 32767), HVD_INT32);
  assert_int_equal(hvd::average_wire_dtype(HVD_UINT16, 32768), HVD_INT64);
  assert_int_equal(hvd::average_wire_dtype(HVD_INT32, 3), HVD_INT64);
  assert_int_equal(hvd::average_wire_dtype(HVD_INT64, 3), HVD_INT64);
  assert_int_equal(hvd::average_wire_dtype(HVD_INT8, 1), HVD_INT8);  // no division
  assert_int_equal(hvd::average_wire_dtype(HVD_FLOAT16, 4), HVD_FLOAT16);
  assert_int_equal(hvd::average_wire_dtype(HVD_BOOL, 4), HVD_BOOL);
}

template <typename T, typename W>
void check_widened(hvd_dtype_t dtype, hvd_dtype_t wire) {
  for (int64_t count : kCounts)
    for (double factor : kFactors) {
      std::vector<T> src(static_cast<size_t>(count)), out(src.size());
      std::vector<W> wide(src.size());
      for (int64_t i = 0; i < count; ++i) src[static_cast<size_t>(i)] = source_value<T>(i);
      hvd::copy_in_widened(wide.data(), wire, src.data(), dtype, count, factor);
      for (int64_t i = 0; i < count; ++i)
        assert_true(wide[static_cast<size_t>(i)] == static_cast<W>(scaled(src[static_cast<size_t>(i)], factor)));
      // Three ranks' sums, beyond the dtype where the values are large (uint8 3 * 100,
      // int8 3 * -50), one off a multiple of three away from zero: the mean truncated
      // toward zero is the value itself.
      for (int64_t i = 0; i < count; ++i) {
        const W x = static_cast<W>(src[static_cast<size_t>(i)]);
        wide[static_cast<size_t>(i)] = x * 3 + (x < 0 ? -1 : 1);
      }
      hvd::copy_out_narrowed(out.data(), dtype, wide.data(), wire, count, 3, factor);
      for (int64_t i = 0; i < count; ++i) {
        const T want = scaled(src[static_cast<size_t>(i)], factor);
        assert_true(out[static_cast<size_t>(i)] == want);
      }
    }
}

void widened_copies_match_their_formula(void**) {
  check_widened<uint8_t, int32_t>(HVD_UINT8, HVD_INT32);
  check_widened<int8_t, int32_t>(HVD_INT8, HVD_INT32);
  check_widened<uint16_t, int32_t>(HVD_UINT16, HVD_INT32);
  check_widened<int16_t, int32_t>(HVD_INT16, HVD_INT32);
  check_widened<int16_t, int64_t>(HVD_INT16, HVD_INT64);
  check_widened<int32_t, int64_t>(HVD_INT32, HVD_INT64);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_type_matches_its_formula),
      cmocka_unit_test(half_precision_rounds_once),
      cmocka_unit_test(float_averages_round_once),
      cmocka_unit_test(booleans_are_copied),
      cmocka_unit_test(wire_dtypes_hold_the_sums),
      cmocka_unit_test(widened_copies_match_their_formula),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
