#define _POSIX_C_SOURCE 200809L /* setenv */
/* What the ranks settle at init: static process sets that differ between ranks, or
 * are invalid on one rank only, fail init on every rank (before, the others hung in
 * the first collective on the set, or in init itself); settings that shape the
 * collectives (fusion threshold, pieces, chunks, the response cache, fusing large
 * tensors) follow rank 0's values, so ranks launched with different environments
 * still make the same MPI calls and get the right sums (before: wrong values on one
 * rank, "Message truncated" on another, or a hang).
 *
 * The tests run in order in one process: the failed inits first, then a good one. */
#include "test_util.h"

static int g_rank, g_size;

static int read_launcher(void** state) {
  (void)state;
  g_rank = tu_launcher_rank();
  g_size = tu_launcher_size();
  return 0;
}

static void assert_init_failed_with(hvd_status_t got, hvd_status_t want, const char* words) {
  if (got != want || !strstr(hvd_last_error(), words))
    fail_msg("rank %d: init returned %d (%s), expected %d with \"%s\"", g_rank, got,
             hvd_last_error(), want, words);
  assert_int_equal(hvd_is_initialized(), 0);
}

static void sets_that_differ_fail_on_every_rank(void** state) {
  (void)state;
  if (g_size < 2) skip();
  /* Rank 0 asks for a set of itself; the others for none (plain hvd_init). */
  const int zero[1] = {0};
  const int* sets[1] = {zero};
  const int n[1] = {1};
  hvd_status_t s = g_rank == 0 ? hvd_init_with_process_sets(1, sets, n) : hvd_init();
  assert_init_failed_with(s, HVD_ERR_MISMATCH, "different static process sets");
  /* The same number of sets, different members on the last rank. */
  int mine[2] = {0, g_rank == g_size - 1 ? g_size - 1 : 1};
  const int* sets2[1] = {mine};
  const int n2[1] = {2};
  s = hvd_init_with_process_sets(1, sets2, n2);
  if (g_size == 2) {
    assert_int_equal(s, HVD_SUCCESS); /* {0, 1} everywhere: they agree */
    assert_hvd_ok(hvd_shutdown());
  } else {
    assert_init_failed_with(s, HVD_ERR_MISMATCH, "differ from rank 0");
  }
}

static void sets_invalid_on_one_rank_fail_on_every_rank(void** state) {
  (void)state;
  if (g_size < 2) skip();
  const int good[1] = {0}, descending[2] = {1, 0};
  const int last = g_rank == g_size - 1;
  const int* sets[1] = {last ? descending : good};
  const int n[1] = {last ? 2 : 1};
  hvd_status_t s = hvd_init_with_process_sets(1, sets, n);
  assert_init_failed_with(s, HVD_ERR_INVALID_ARGUMENT, last ? "ascending" : "invalid process sets");
  /* One rank's NULL pointers: still an error everywhere, never a hang. */
  s = last ? hvd_init_with_process_sets(1, NULL, NULL) : hvd_init_with_process_sets(1, sets, n);
  assert_init_failed_with(s, HVD_ERR_INVALID_ARGUMENT, last ? "NULL" : "invalid process sets");
}

/* Knob -> the value each rank sets: rank 0's first, any other rank's second. */
static const char* const kKnobs[][3] = {
    {"HOROVOD_FUSION_THRESHOLD", "65536", "0"},
    {"HVD_FUSION_PIECE_BYTES", "8192", "1048576"},
    {"HVD_ALLREDUCE_CHUNK_BYTES", "4096", "1048576"},
    {"HVD_INPLACE_MIN_BYTES", "16384", "1000000"},
    {"HVD_FUSE_LARGE", "always", "never"},
    {"HOROVOD_CACHE_CAPACITY", "0", "1024"},
};
#define NUM_KNOBS ((int)(sizeof kKnobs / sizeof kKnobs[0]))

static void settings_follow_rank_0(void** state) {
  (void)state;
  for (int k = 0; k < NUM_KNOBS; ++k) setenv(kKnobs[k][0], kKnobs[k][g_rank == 0 ? 1 : 2], 1);
  assert_hvd_ok(hvd_init());
  for (int k = 0; k < NUM_KNOBS; ++k) {
    char value[64];
    assert_hvd_ok(hvd_param_get(kKnobs[k][0], value, sizeof value));
    if (strcmp(value, kKnobs[k][1]) != 0)
      fail_msg("rank %d: %s is %s, rank 0 set %s", g_rank, kKnobs[k][0], value, kKnobs[k][1]);
  }
  /* Tensors of 1 element to 47 KiB: several batches, pieces and chunks under rank 0's
   * settings (any rank on its own settings would make other calls). Three steps: the
   * response cache, off on rank 0, must be off everywhere too. Twenty tensors over
   * that range (456 KiB a step, in rank 0's 4 KiB chunks) take every one of those
   * paths; more would only repeat them, each chunk an MPI call, slow with more ranks
   * than cores. */
  enum { kTensors = 20, kCountStep = 614 };
  static float data[kTensors][12288];
  hvd_handle_t h[kTensors];
  for (int step = 0; step < 3; ++step) {
    for (int t = 0; t < kTensors; ++t) {
      const int64_t count = 1 + (int64_t)t * kCountStep;
      for (int64_t i = 0; i < count; ++i) data[t][i] = (float)(g_rank + 1 + (i % 5));
      char name[32];
      snprintf(name, sizeof name, "agreed.%d", t);
      assert_hvd_ok(hvd_allreduce_async(data[t], data[t], count, HVD_FLOAT32, HVD_OP_SUM, name,
                                        NULL, &h[t]));
    }
    for (int t = 0; t < kTensors; ++t) assert_hvd_ok(hvd_wait(h[t]));
    for (int t = 0; t < kTensors; ++t) {
      const int64_t count = 1 + (int64_t)t * kCountStep;
      for (int64_t i = 0; i < count; ++i) {
        const float want = (float)(g_size * (g_size + 1) / 2 + g_size * (i % 5));
        if (data[t][i] != want)
          fail_msg("rank %d step %d: tensor %d [%lld] is %g, expected %g", g_rank, step, t,
                   (long long)i, data[t][i], want);
      }
    }
  }
  assert_hvd_ok(hvd_shutdown());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sets_that_differ_fail_on_every_rank),
      cmocka_unit_test(sets_invalid_on_one_rank_fail_on_every_rank),
      cmocka_unit_test(settings_follow_rank_0),
  };
  return cmocka_run_group_tests(tests, read_launcher, NULL);
}
