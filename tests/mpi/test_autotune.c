/* Autotuning on a real job: parameters, the response cache included, change while the
 * job runs (every rank at the same round, or fused buffers or the cache's bit vectors
 * would disagree and results go wrong or hang), results stay right at every step, and
 * rank 0 writes Horovod's CSV log. Run with HOROVOD_AUTOTUNE=1, small sample sizes,
 * and the log path as argv[1]. */
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

static const char* g_log;

static void results_stay_right_while_tuning(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  /* The suites tune with 1 warm-up sample, 2 steps a window (3 windows a sample) and
   * at most 8 samples: about 60 steps until the tuner settles (each step is its 24
   * names coming back). 160 leave it room for more than twice that, and then run on
   * the chosen parameters. */
  enum { TENSORS = 24, STEPS = 160 };
  static float bufs[TENSORS][4096];
  int64_t counts[TENSORS];
  for (int t = 0; t < TENSORS; ++t) counts[t] = 16 + (t * 997) % 4000;
  for (int step = 0; step < STEPS; ++step) {
    hvd_handle_t h[TENSORS];
    /* Reverse order, as a backward pass produces gradients. */
    for (int t = TENSORS - 1; t >= 0; --t) {
      for (int64_t i = 0; i < counts[t]; ++i) bufs[t][i] = (float)(rank + t + step % 7);
      char name[32];
      snprintf(name, sizeof name, "grad.%d", t);
      assert_hvd_ok(hvd_allreduce_async(bufs[t], bufs[t], counts[t], HVD_FLOAT32, HVD_OP_SUM,
                                        name, NULL, &h[t]));
    }
    for (int t = TENSORS - 1; t >= 0; --t) {
      assert_hvd_ok(hvd_wait(h[t]));
      float want = (float)(size * (t + step % 7) + size * (size - 1) / 2);
      if (bufs[t][0] != want || bufs[t][counts[t] - 1] != want)
        fail_msg("step %d tensor %d: %g != %g", step, t, bufs[t][0], want);
    }
  }
}

static void rank0_wrote_the_log(void** state) {
  (void)state;
  assert_hvd_ok(hvd_shutdown()); /* tuning ends; the log gets its best row */
  if (hvd_rank() != -1) fail_msg("still initialized");
  if (tu_launcher_rank() != 0) return;
  FILE* f = fopen(g_log, "r");
  assert_non_null(f);
  char line[512];
  assert_non_null(fgets(line, sizeof line, f));
  assert_non_null(strstr(line, "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,"
                               "cache_enabled,cycle_time_ms,tensor_fusion_threshold,score"));
  int rows = 0, cache_rows[2] = {0, 0};
  char first[512] = "", other = 0;
  while (fgets(line, sizeof line, f)) {
    if (!rows) snprintf(first, sizeof first, "%s", line);
    else if (strcmp(line, first) != 0) other = 1;
    ++rows;
    /* The fourth column, cache_enabled: the cache is tuned too (its capacity is not set). */
    int h0, h1, torus, cache;
    if (sscanf(line, "%d,%d,%d,%d,", &h0, &h1, &torus, &cache) != 4 || cache < 0 || cache > 1)
      fail_msg("bad autotune log row: %s", line);
    ++cache_rows[cache];
  }
  fclose(f);
  if (rows < 3) fail_msg("only %d samples in the autotune log", rows);
  assert_true(other); /* parameters did change */
  if (!cache_rows[0] || !cache_rows[1])
    fail_msg("the cache was not tuned: %d rows with it off, %d on", cache_rows[0], cache_rows[1]);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  g_log = argv[1];
  setenv("HOROVOD_AUTOTUNE_LOG", g_log, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(results_stay_right_while_tuning),
      cmocka_unit_test(rank0_wrote_the_log),
  };
  return cmocka_run_group_tests_name("autotune", tests, tu_group_init, NULL);
}
