/* Step accounting against a job whose compute and communication are known: each
 * step sleeps a set time (the compute; rank r sleeps longer by r * kSkewMs, so the
 * faster ranks wait on the slower ones) and then reduces a set number of bytes. The
 * accounting must say that compute plus exposed wait makes up the step (within a
 * tolerance a loaded machine meets), count the bytes and the steps exactly, with
 * hvd_mark_step and with detection. Plus the argument checks. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "test_util.h"

enum { kSteps = 12, kCount = 4096, kComputeMs = 8, kSkewMs = 6 };

/* The step identity's tolerance: 20% of the step or 4 ms, whichever is larger. What
 * the accounting leaves out (enqueueing, the test's own loop) is microseconds; the
 * rest is the scheduling noise of a loaded 2-core machine. */
#define STEP_TOLERANCE(step) ((step) * 0.2 > 0.004 ? (step) * 0.2 : 0.004)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleeps ms milliseconds; returns the time actually slept. */
static double compute(int ms) {
  double start = now_s();
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  return now_s() - start;
}

static void before_init(void** state) {
  (void)state;
  hvd_step_stats_t stats = HVD_STEP_STATS_INITIALIZER;
  assert_int_equal(hvd_get_step_stats(&stats), HVD_ERR_NOT_INITIALIZED);
  assert_int_equal(hvd_mark_step(), HVD_ERR_NOT_INITIALIZED);
  int count = -1;
  assert_int_equal(hvd_get_step_top_tensors(NULL, 0, &count), HVD_ERR_NOT_INITIALIZED);
}

static void bad_arguments(void** state) {
  (void)state;
  assert_int_equal(hvd_get_step_stats(NULL), HVD_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(hvd_last_error(), "NULL"));
  hvd_step_stats_t stats = HVD_STEP_STATS_INITIALIZER;
  stats.struct_size = 8;
  assert_int_equal(hvd_get_step_stats(&stats), HVD_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(hvd_last_error(), "struct_size"));
  stats.struct_size = 0;
  assert_int_equal(hvd_get_step_stats(&stats), HVD_ERR_INVALID_ARGUMENT);
  int count = 0;
  hvd_step_tensor_t top[2];
  assert_int_equal(hvd_get_step_top_tensors(top, 2, NULL), HVD_ERR_INVALID_ARGUMENT);
  assert_int_equal(hvd_get_step_top_tensors(NULL, 2, &count), HVD_ERR_INVALID_ARGUMENT);
  assert_int_equal(hvd_get_step_top_tensors(top, -1, &count), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_ok(hvd_get_step_top_tensors(NULL, 0, &count));
  assert_int_equal(count, 0);
}

/* Runs kSteps steps; marks each step's start (and the end of the last) when marking.
 * Returns the mean compute time of the steps the accounting measures. */
static double run_steps(int marking, int first_measured) {
  float* data = malloc(kCount * sizeof(float));
  assert_non_null(data);
  double compute_sum = 0;
  int measured = 0;
  for (int step = 0; step < kSteps; ++step) {
    if (marking) assert_hvd_ok(hvd_mark_step());
    double slept = compute(kComputeMs + kSkewMs * hvd_rank());
    if (step >= first_measured) {
      compute_sum += slept;
      ++measured;
    }
    for (int i = 0; i < kCount; ++i) data[i] = (float)(i % 7);
    assert_hvd_ok(hvd_allreduce(data, data, kCount, HVD_FLOAT32, HVD_OP_SUM, "grad.a"));
    assert_true(data[5] == (float)(5 * hvd_size()));
  }
  if (marking) assert_hvd_ok(hvd_mark_step());
  free(data);
  return measured ? compute_sum / measured : 0;
}

static void check_accounting(const hvd_step_stats_t* s, int64_t expected_steps, double compute_s) {
  assert_int_equal(s->enabled, 1);
  assert_int_equal(s->warmup_steps, 1);
  assert_int_equal(s->steps, expected_steps);
  assert_int_equal(s->bytes_per_step, (int64_t)kCount * 4);
  assert_true(s->exposed_wait_seconds >= 0);
  assert_true(s->negotiate_seconds >= 0 && s->copy_seconds >= 0 && s->transfer_seconds >= 0);
  const double accounted = compute_s + s->exposed_wait_seconds;
  const double off = s->step_seconds - accounted;
  if (off > STEP_TOLERANCE(s->step_seconds) || -off > STEP_TOLERANCE(s->step_seconds))
    fail_msg("rank %d: step %.6f s, compute %.6f s + exposed wait %.6f s = %.6f s (off by %.6f s)",
             hvd_rank(), s->step_seconds, compute_s, s->exposed_wait_seconds, accounted, off);
  if (hvd_size() > 1) assert_true(s->bus_bandwidth > 0);
  else assert_true(s->bus_bandwidth == 0);
  /* Only the shutdown summary measures the reference. */
  assert_true(s->reference_bus_bandwidth == 0);
  int count = 0;
  hvd_step_tensor_t top[4];
  assert_hvd_ok(hvd_get_step_top_tensors(top, 4, &count));
  assert_true(count <= 1);
  if (count == 1) {
    assert_string_equal(top[0].name, "grad.a");
    assert_true(top[0].wait_seconds > 0);
  }
}

/* Marks at each step's start and after the last: kSteps steps, the first is warm-up. */
static void marked_steps(void** state) {
  (void)state;
  assert_hvd_ok(hvd_init());
  double compute_s = run_steps(1, 1);
  hvd_step_stats_t s = HVD_STEP_STATS_INITIALIZER;
  assert_hvd_ok(hvd_get_step_stats(&s));
  check_accounting(&s, kSteps - 1, compute_s);
  assert_hvd_ok(hvd_shutdown());
  /* After shutdown: the run that ended. */
  hvd_step_stats_t after = HVD_STEP_STATS_INITIALIZER;
  assert_hvd_ok(hvd_get_step_stats(&after));
  assert_int_equal(after.steps, s.steps);
  assert_int_equal(hvd_mark_step(), HVD_ERR_NOT_INITIALIZED);
}

/* Detection: the first run of "grad.a" starts step 1, each later one ends a step;
 * the last step never ends: kSteps - 1 steps, the first is warm-up. */
static void detected_steps(void** state) {
  (void)state;
  assert_hvd_ok(hvd_init());
  /* Step k's interval runs from its "grad.a" to the next one: it holds step k + 1's
   * compute, so the first measured interval holds step 3's. */
  double compute_s = run_steps(0, 2);
  hvd_step_stats_t s = HVD_STEP_STATS_INITIALIZER;
  assert_hvd_ok(hvd_get_step_stats(&s));
  check_accounting(&s, kSteps - 2, compute_s);
  assert_hvd_ok(hvd_shutdown());
}

/* A deliberate skew: the last rank sleeps kLateMs before each submit, so every other
 * rank waits for it. With the summary asked for (the transfers then wait for their
 * last rank apart from the transfer itself), that wait is the early ranks' exposed
 * wait, never their transfer time, and every rank counts the same steps. */
static void late_rank_is_waiting_not_transfer(void** state) {
  (void)state;
  enum { kLateMs = 60 };
  assert_int_equal(setenv("HVD_SUMMARY", "1", 1), 0);
  assert_hvd_ok(hvd_init());
  const int late = hvd_rank() == hvd_size() - 1;
  float* data = malloc(kCount * sizeof(float));
  assert_non_null(data);
  for (int step = 0; step < kSteps / 2; ++step) {
    if (late) compute(kLateMs);
    for (int i = 0; i < kCount; ++i) data[i] = 1.0f;
    assert_hvd_ok(hvd_allreduce(data, data, kCount, HVD_FLOAT32, HVD_OP_SUM, "late.grad"));
    assert_hvd_ok(hvd_mark_step());
  }
  free(data);
  hvd_step_stats_t s = HVD_STEP_STATS_INITIALIZER;
  assert_hvd_ok(hvd_get_step_stats(&s));
  assert_int_equal(s.steps, kSteps / 2 - 1 - s.warmup_steps);
  int64_t steps[2] = {s.steps, s.steps};
  assert_hvd_ok(hvd_allreduce(&steps[0], &steps[0], 1, HVD_INT64, HVD_OP_MIN, "late.min"));
  assert_hvd_ok(hvd_allreduce(&steps[1], &steps[1], 1, HVD_INT64, HVD_OP_MAX, "late.max"));
  assert_int_equal(steps[0], steps[1]);
  if (hvd_size() > 1 && !late) {
    /* Generous margins: the wait is the skew (60 ms a step), the transfer of 16 KiB
     * on one machine well under a millisecond. */
    if (!(s.exposed_wait_seconds > s.transfer_seconds && s.transfer_seconds < kLateMs * 1e-3 / 2 &&
          s.exposed_wait_seconds > kLateMs * 1e-3 / 2))
      fail_msg("rank %d: exposed wait %.6f s, transfer %.6f s per step with a peer %d ms late",
               hvd_rank(), s.exposed_wait_seconds, s.transfer_seconds, kLateMs);
  }
  assert_hvd_ok(hvd_shutdown());
  assert_int_equal(unsetenv("HVD_SUMMARY"), 0);
}

/* A struct from an older, smaller caller is filled up to its size. */
static void smaller_struct(void** state) {
  (void)state;
  assert_hvd_ok(hvd_init());
  hvd_step_stats_t s;
  memset(&s, 0x5a, sizeof s);
  s.struct_size = offsetof(hvd_step_stats_t, reserved);
  assert_hvd_ok(hvd_get_step_stats(&s));
  assert_int_equal(s.steps, 0);
  assert_int_equal(s.reserved[0], 0x5a);
  assert_hvd_ok(hvd_shutdown());
}

int main(void) {
  const struct CMUnitTest before[] = {cmocka_unit_test(before_init)};
  int failed = cmocka_run_group_tests_name("step_stats.before_init", before, NULL, NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(marked_steps),
      cmocka_unit_test(detected_steps),
      cmocka_unit_test(late_rank_is_waiting_not_transfer),
      cmocka_unit_test(smaller_struct),
      cmocka_unit_test(bad_arguments),
  };
  failed += cmocka_run_group_tests_name("step_stats", tests, NULL, NULL);
  return failed ? 1 : 0;
}
