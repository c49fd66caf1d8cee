/* AVERAGE of integers is the mean whenever the mean fits the dtype, though the sum
 * over the ranks does not: int8 {100, 100} averages to 100, not to -28 (the sum wrapped
 * in int8). Values at and near each dtype's limits, in every combination over the
 * ranks, alone and fused, allreduce and reducescatter, with and without prescale and
 * postscale factors. The mean is
 * the sum divided truncating toward zero, as C divides; factors round toward zero too
 * (the prescaled operand in the dtype, the postscaled mean into it). int64 is summed in
 * int64, so its values here keep the sum in range. */
#include "test_util.h"

static const hvd_dtype_t kInts[] = {HVD_UINT8, HVD_INT8, HVD_UINT16, HVD_INT16, HVD_INT32, HVD_INT64};
#define NUM_INTS 6
#define NUM_VALUES 8

/* The values each dtype's elements take: its limits, next to them, and around zero. */
static int64_t value_of(hvd_dtype_t d, int k) {
  int64_t lo, hi;
  switch (d) {
    case HVD_UINT8: lo = 0, hi = UINT8_MAX; break;
    case HVD_INT8: lo = INT8_MIN, hi = INT8_MAX; break;
    case HVD_UINT16: lo = 0, hi = UINT16_MAX; break;
    case HVD_INT16: lo = INT16_MIN, hi = INT16_MAX; break;
    case HVD_INT32: lo = INT32_MIN, hi = INT32_MAX; break;
    default: lo = -((int64_t)1 << 60), hi = (int64_t)1 << 60; break;  /* the sum must fit */
  }
  const int64_t values[NUM_VALUES] = {hi, lo, hi - 1, lo + 1, 0, 1, hi / 2 + 1, lo < 0 ? -1 : 2};
  return values[k];
}

/* Rank r's value at element i: every pair of values between two ranks occurs. */
static int value_index(int rank, int64_t i) {
  return (int)((i + (int64_t)rank * (i / NUM_VALUES + 1)) % NUM_VALUES);
}

static void put(void* buf, hvd_dtype_t d, int64_t i, int64_t v) {
  switch (d) {
    case HVD_UINT8: ((uint8_t*)buf)[i] = (uint8_t)v; break;
    case HVD_INT8: ((int8_t*)buf)[i] = (int8_t)v; break;
    case HVD_UINT16: ((uint16_t*)buf)[i] = (uint16_t)v; break;
    case HVD_INT16: ((int16_t*)buf)[i] = (int16_t)v; break;
    case HVD_INT32: ((int32_t*)buf)[i] = (int32_t)v; break;
    default: ((int64_t*)buf)[i] = v; break;
  }
}

static int64_t get(const void* buf, hvd_dtype_t d, int64_t i) {
  switch (d) {
    case HVD_UINT8: return ((const uint8_t*)buf)[i];
    case HVD_INT8: return ((const int8_t*)buf)[i];
    case HVD_UINT16: return ((const uint16_t*)buf)[i];
    case HVD_INT16: return ((const int16_t*)buf)[i];
    case HVD_INT32: return ((const int32_t*)buf)[i];
    default: return ((const int64_t*)buf)[i];
  }
}

/* Truncation toward zero of x * factor into the dtype (the factors here shrink values,
 * so the result is in range). */
static int64_t scaled(int64_t x, double factor) {
  return factor == 1.0 ? x : (int64_t)((double)x * factor);
}

static int64_t expected(hvd_dtype_t d, int64_t i, double pre, double post) {
  int64_t sum = 0;
  for (int r = 0; r < hvd_size(); ++r) sum += scaled(value_of(d, value_index(r, i)), pre);
  return scaled(sum / hvd_size(), post);
}

static const char* dtype_text(hvd_dtype_t d) {
  static const char* names[] = {"uint8", "int8", "uint16", "int16", "int32", "int64"};
  return names[d];
}

static void check(const char* what, const void* buf, hvd_dtype_t d, int64_t n, double pre, double post) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t want = expected(d, i, pre, post);
    if (get(buf, d, i) != want)
      fail_msg("%s: %s element %lld (pre %g, post %g) is %lld, want %lld", what, dtype_text(d),
               (long long)i, pre, post, (long long)get(buf, d, i), (long long)want);
  }
}

static void fill(void* buf, hvd_dtype_t d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) put(buf, d, i, value_of(d, value_index(hvd_rank(), i)));
}

static const double kFactors[][2] = {{1.0, 1.0}, {0.5, 1.0}, {1.0, 0.5}, {0.5, 0.25}};
#define NUM_FACTORS 4
enum { COUNT = NUM_VALUES * NUM_VALUES };

static hvd_op_options_t scaling(double pre, double post) {
  hvd_op_options_t o;
  assert_hvd_ok(hvd_op_options_init(&o));
  o.prescale_factor = pre;
  o.postscale_factor = post;
  return o;
}

/* One tensor at a time, in place and out of place. */
static void average_alone(void** state) {
  (void)state;
  for (int t = 0; t < NUM_INTS; ++t)
    for (int f = 0; f < NUM_FACTORS; ++f) {
      const hvd_dtype_t d = kInts[t];
      const hvd_op_options_t o = scaling(kFactors[f][0], kFactors[f][1]);
      int64_t in[COUNT], out[COUNT];
      fill(in, d, COUNT);
      hvd_handle_t h;
      assert_hvd_ok(hvd_allreduce_async(in, out, COUNT, d, HVD_OP_AVERAGE, NULL, &o, &h));
      assert_hvd_ok(hvd_wait(h));
      check("alone, out of place", out, d, COUNT, kFactors[f][0], kFactors[f][1]);
      assert_hvd_ok(hvd_allreduce_async(in, in, COUNT, d, HVD_OP_AVERAGE, NULL, &o, &h));
      assert_hvd_ok(hvd_wait(h));
      check("alone, in place", in, d, COUNT, kFactors[f][0], kFactors[f][1]);
    }
}

/* Several tensors of a dtype in flight together: fused, each with its own start. */
static void average_fused(void** state) {
  (void)state;
  enum { TENSORS = 3 };
  for (int t = 0; t < NUM_INTS; ++t)
    for (int f = 0; f < NUM_FACTORS; ++f) {
      const hvd_dtype_t d = kInts[t];
      const hvd_op_options_t o = scaling(kFactors[f][0], kFactors[f][1]);
      int64_t bufs[TENSORS][COUNT];
      hvd_handle_t handles[TENSORS];
      for (int k = 0; k < TENSORS; ++k) {
        char name[64];
        snprintf(name, sizeof name, "intavg.%d.%d.%d", t, f, k);
        fill(bufs[k], d, COUNT);
        assert_hvd_ok(hvd_allreduce_async(bufs[k], bufs[k], COUNT, d, HVD_OP_AVERAGE, name, &o,
                                          &handles[k]));
      }
      for (int k = 0; k < TENSORS; ++k) {
        assert_hvd_ok(hvd_wait(handles[k]));
        check("fused", bufs[k], d, COUNT, kFactors[f][0], kFactors[f][1]);
      }
    }
}

/* Reducescatter averages the same way: each rank's block of a tensor whose rows are
 * the allreduce tests' elements, COUNT per rank; alone, then two fused. */
static void reducescatter_average(void** state) {
  (void)state;
  const int size = hvd_size();
  const int64_t shape[1] = {(int64_t)COUNT * size};
  int64_t* in[2];
  int64_t out[2][COUNT];
  for (int t = 0; t < NUM_INTS; ++t)
    for (int f = 0; f < NUM_FACTORS; ++f) {
      const hvd_dtype_t d = kInts[t];
      const hvd_op_options_t o = scaling(kFactors[f][0], kFactors[f][1]);
      for (int k = 0; k < 2; ++k) {
        in[k] = tu_alloc(sizeof(int64_t) * COUNT * (size_t)size);
        for (int q = 0; q < size; ++q) fill((char*)in[k] + tu_dtype_size(d) * COUNT * (size_t)q, d, COUNT);
      }
      hvd_handle_t h[2];
      assert_hvd_ok(hvd_reducescatter_async(in[0], out[0], 1, shape, d, HVD_OP_AVERAGE, NULL, &o, &h[0]));
      assert_hvd_ok(hvd_wait(h[0]));
      check("reducescatter alone", out[0], d, COUNT, kFactors[f][0], kFactors[f][1]);
      for (int k = 0; k < 2; ++k) {
        char name[64];
        snprintf(name, sizeof name, "intavg.rs.%d.%d.%d", t, f, k);
        assert_hvd_ok(hvd_reducescatter_async(in[k], out[k], 1, shape, d, HVD_OP_AVERAGE, name, &o, &h[k]));
      }
      for (int k = 0; k < 2; ++k) {
        assert_hvd_ok(hvd_wait(h[k]));
        check("reducescatter fused", out[k], d, COUNT, kFactors[f][0], kFactors[f][1]);
        free(in[k]);
      }
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(average_alone),
      cmocka_unit_test(average_fused),
      cmocka_unit_test(reducescatter_average),
  };
  return cmocka_run_group_tests_name("int_average", tests, tu_group_init, tu_group_shutdown);
}
