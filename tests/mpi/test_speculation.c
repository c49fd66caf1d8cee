#define _DEFAULT_SOURCE /* usleep, setenv */
/* Speculation (HVD_SPECULATIVE_BYTES): a repeated lone small allreduce travels with
 * its negotiation round. Results must be exactly those of the ordinary path, in every
 * dtype and op, with ranks in step and out of step; and it must step aside where it
 * does not apply (joined ranks, process sets, groups, large tensors, a rank whose
 * spec differs, a rank that turned it off), without a hang. */
#include <unistd.h>

#include "test_util.h"

static uint64_t speculated(void) { return tu_counters().speculative; }

/* Rank q's element i: small integers, so that sums and products are exact in every
 * dtype (float16 and bfloat16 included) and min/max tell the ranks apart. */
static double input(int q, int i, hvd_reduce_op_t op) {
  if (op == HVD_OP_PRODUCT) return (q + i) % 2 + 1; /* 1 or 2 */
  return (q * 3 + i) % 7;
}

static double expected(int size, int i, hvd_reduce_op_t op) {
  double acc = input(0, i, op);
  for (int q = 1; q < size; ++q) {
    const double v = input(q, i, op);
    switch (op) {
      case HVD_OP_MIN: acc = v < acc ? v : acc; break;
      case HVD_OP_MAX: acc = v > acc ? v : acc; break;
      case HVD_OP_PRODUCT: acc *= v; break;
      default: acc += v; break;
    }
  }
  return op == HVD_OP_AVERAGE ? acc / size : acc;
}

/* Runs `steps` blocking allreduces of one named tensor and checks each result. */
static void run_lone(const char* name, hvd_dtype_t dtype, hvd_reduce_op_t op, int count,
                     int steps, int late_rank) {
  const int rank = hvd_rank(), size = hvd_size();
  void* buf = tu_alloc(tu_dtype_size(dtype) * (size_t)count);
  for (int step = 0; step < steps; ++step) {
    for (int i = 0; i < count; ++i) tu_set(buf, dtype, i, input(rank, i, op));
    /* One rank arrives late every other step: the first round then carries the
       payload without that rank's data, which must be dropped, not used. */
    if (rank == late_rank && step % 2 == 1) usleep(20000);
    assert_hvd_ok(hvd_allreduce(buf, buf, count, dtype, op, name));
    for (int i = 0; i < count; ++i) {
      const double want = expected(size, i, op);
      const double got = tu_get(buf, dtype, i);
      const double tolerance = op == HVD_OP_AVERAGE ? tu_tolerance(dtype) : 0;
      if (fabs(got - want) > tolerance * (fabs(want) + 1))
        fail_msg("%s step %d element %d: %g, expected %g", name, step, i, got, want);
    }
  }
  free(buf);
}

static void every_dtype_and_op_repeated(void** state) {
  (void)state;
  static const hvd_reduce_op_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX,
                                        HVD_OP_PRODUCT};
  const int steps = 6;
  char name[64];
  for (int d = 0; d < NUM_DTYPES; ++d) {
    const hvd_dtype_t dtype = kAllDtypes[d];
    if (dtype == HVD_BOOL) continue; /* bool_min_max */
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; ++o) {
      if (ops[o] == HVD_OP_AVERAGE && !tu_is_float(dtype)) continue;
      snprintf(name, sizeof name, "spec.%d.%d", (int)dtype, (int)ops[o]);
      const uint64_t before = speculated();
      run_lone(name, dtype, ops[o], 33, steps, -1);
      /* The first step is negotiated by name; every later one rides with its round. */
      const uint64_t ran = speculated() - before;
      if (ran < (uint64_t)(steps - 2))
        fail_msg("%s: %llu of %d steps speculated", name, (unsigned long long)ran, steps);
    }
  }
}

static void bool_min_max(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  uint8_t v[5];
  for (int step = 0; step < 4; ++step) {
    for (int i = 0; i < 5; ++i) v[i] = (uint8_t)((rank + i) % 2);
    assert_hvd_ok(hvd_allreduce(v, v, 5, HVD_BOOL, HVD_OP_MAX, "spec.bool.or"));
    for (int i = 0; i < 5; ++i) assert_int_equal(v[i], size > 1 ? 1 : (i % 2));
  }
}

static void ranks_out_of_step(void** state) {
  (void)state;
  const int size = hvd_size();
  run_lone("spec.late.last", HVD_FLOAT32, HVD_OP_SUM, 100, 8, size - 1);
  run_lone("spec.late.first", HVD_INT64, HVD_OP_MAX, 3, 8, 0);
}

static void scaled_average_out_of_place(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  double in[9], out[9];
  hvd_op_options_t opts;
  hvd_op_options_init(&opts);
  opts.prescale_factor = 0.5;
  opts.postscale_factor = 3.0;
  for (int step = 0; step < 5; ++step) {
    for (int i = 0; i < 9; ++i) in[i] = rank + i + step;
    hvd_handle_t h;
    assert_hvd_ok(hvd_allreduce_async(in, out, 9, HVD_FLOAT64, HVD_OP_AVERAGE, "spec.scaled",
                                      &opts, &h));
    assert_hvd_ok(hvd_wait(h));
    for (int i = 0; i < 9; ++i) {
      const double want = 0.5 * 3.0 * ((size - 1) / 2.0 + i + step);
      assert_float_equal(out[i], want, 1e-12);
      assert_float_equal(in[i], rank + i + step, 0); /* the input is left alone */
    }
  }
}

static void alternating_tensors(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  float a[4], b[1000];
  for (int step = 0; step < 6; ++step) {
    for (int i = 0; i < 4; ++i) a[i] = (float)(rank + i);
    assert_hvd_ok(hvd_allreduce(a, a, 4, HVD_FLOAT32, HVD_OP_SUM, "spec.alt.a"));
    for (int i = 0; i < 1000; ++i) b[i] = (float)rank;
    assert_hvd_ok(hvd_allreduce(b, b, 1000, HVD_FLOAT32, HVD_OP_SUM, "spec.alt.b"));
    for (int i = 0; i < 4; ++i) assert_float_equal(a[i], size * (size - 1) / 2.0 + size * i, 0);
    assert_float_equal(b[999], size * (size - 1) / 2.0, 0);
  }
}

static void where_it_does_not_apply(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  /* Larger than the limit (16 KiB by default). */
  const int big = 8192;
  float* x = tu_alloc(sizeof(float) * big);
  uint64_t before = speculated();
  for (int step = 0; step < 4; ++step) {
    for (int i = 0; i < big; ++i) x[i] = 1;
    assert_hvd_ok(hvd_allreduce(x, x, big, HVD_FLOAT32, HVD_OP_SUM, "spec.big"));
    assert_float_equal(x[big - 1], size, 0);
  }
  free(x);
  assert_int_equal(speculated() - before, 0);
  /* A group of two, repeated. */
  before = speculated();
  for (int step = 0; step < 4; ++step) {
    float p[2] = {1, 2}, q[3] = {3, 4, 5};
    const void* sends[2] = {p, q};
    void* recvs[2] = {p, q};
    const int64_t counts[2] = {2, 3};
    assert_hvd_ok(hvd_grouped_allreduce(2, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM,
                                        "spec.group", NULL));
    assert_float_equal(q[2], 5.0 * size, 0);
  }
  assert_int_equal(speculated() - before, 0);
  /* A process set (the first two ranks; with two ranks that would be the global set). */
  if (size >= 3) {
    const int members[2] = {0, 1};
    int32_t id = -1;
    assert_hvd_ok(hvd_add_process_set(members, 2, &id));
    before = speculated();
    if (rank < 2) {
      hvd_op_options_t opts;
      hvd_op_options_init(&opts);
      opts.process_set_id = id;
      for (int step = 0; step < 4; ++step) {
        float v = (float)(rank + 1);
        hvd_handle_t h;
        assert_hvd_ok(hvd_allreduce_async(&v, &v, 1, HVD_FLOAT32, HVD_OP_SUM, "spec.set", &opts, &h));
        assert_hvd_ok(hvd_wait(h));
        assert_float_equal(v, 3, 0);
      }
    }
    assert_hvd_ok(hvd_remove_process_set(id));
    assert_int_equal(speculated() - before, 0);
  }
}

/* A joined rank has no data: the others' repeated allreduce runs the ordinary way,
 * with its zeros. */
static void with_a_joined_rank(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (rank != 0) {
    for (int step = 0; step < 5; ++step) {
      float v[3] = {1, 1, 1};
      assert_hvd_ok(hvd_allreduce(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, "spec.joined"));
      assert_float_equal(v[2], size - 1, 0);
    }
  }
  int last = -1;
  assert_hvd_ok(hvd_join(HVD_DEVICE_CPU, &last));
}

/* A rank whose shape differs once the tensor is cached: an error on every rank. */
static void a_differing_spec_is_still_an_error(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) skip();
  float v[6] = {1, 1, 1, 1, 1, 1};
  for (int step = 0; step < 4; ++step) {
    const int64_t mine[2] = {2, 3}, other[2] = {3, 2};
    hvd_op_options_t opts;
    hvd_op_options_init(&opts);
    opts.shape = step == 3 && rank == 1 ? other : mine;
    opts.ndim = 2;
    hvd_handle_t h;
    assert_hvd_ok(hvd_allreduce_async(v, v, 6, HVD_FLOAT32, HVD_OP_SUM, "spec.shape", &opts, &h));
    if (step < 3) {
      assert_hvd_ok(hvd_wait(h));
    } else {
      assert_hvd_status(hvd_wait(h), HVD_ERR_MISMATCH);
      assert_non_null(strstr(hvd_last_error(), "shape"));
    }
  }
}

/* One rank turns speculation off: the job agrees on off, and nothing hangs. */
static void one_rank_turns_it_off(void** state) {
  (void)state;
  assert_hvd_ok(hvd_shutdown());
  if (tu_launcher_rank() == 0) setenv("HVD_SPECULATIVE_BYTES", "0", 1);
  assert_hvd_ok(hvd_init());
  unsetenv("HVD_SPECULATIVE_BYTES");
  const uint64_t before = speculated();
  run_lone("spec.off", HVD_FLOAT32, HVD_OP_SUM, 16, 5, -1);
  assert_int_equal(speculated() - before, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_dtype_and_op_repeated),
      cmocka_unit_test(bool_min_max),
      cmocka_unit_test(ranks_out_of_step),
      cmocka_unit_test(scaled_average_out_of_place),
      cmocka_unit_test(alternating_tensors),
      cmocka_unit_test(where_it_does_not_apply),
      cmocka_unit_test(with_a_joined_rank),
      cmocka_unit_test(a_differing_spec_is_still_an_error),
      cmocka_unit_test(one_rank_turns_it_off),
  };
  return cmocka_run_group_tests_name("speculation", tests, tu_group_init, tu_group_shutdown);
}
