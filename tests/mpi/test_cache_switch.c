/* The response cache switched off and on while tensors are in flight. Run with
 * HVD_CACHE_TOGGLE_ROUNDS=N: rank 0 flips the cache every N negotiation rounds
 * through the entry autotune decisions travel in, and every rank switches between
 * the same two rounds. Each rank enqueues the same tensors in its own order, part of
 * them only after waiting for others, so at a switch some ranks hold tensors waiting
 * on cache slots that other ranks have not submitted yet: those must go back to
 * announcements, and every result must still be exact, with no hang.
 *
 * The library's debug log (HOROVOD_LOG_LEVEL=debug) is read from this process's
 * standard error through a pipe to count the switches; other lines pass through. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <unistd.h>

#include "test_util.h"

enum { NA = 16, NB = 16, STEPS = 120, MAX_COUNT = 300, MIN_SWITCHES = 4 };

/* ---- standard error, watched for the library's switch lines ---- */

static int g_saved_stderr = -1;
static int g_pipe[2] = {-1, -1};
static pthread_t g_reader;
static int g_switched_off, g_switched_on;

static void count_line(const char* line, size_t len) {
  if (strstr(line, "response cache off")) ++g_switched_off;
  else if (strstr(line, "response cache on")) ++g_switched_on;
  else if (!strstr(line, "autotune: now")) {
    if (write(g_saved_stderr, line, len) < 0) { /* nothing better to do */
    }
  }
}

static void* read_stderr(void* arg) {
  (void)arg;
  char line[4096];
  size_t used = 0;
  char c;
  while (read(g_pipe[0], &c, 1) == 1) {
    if (used < sizeof line - 2) line[used++] = c;
    if (c == '\n') {
      line[used] = '\0';
      count_line(line, used);
      used = 0;
    }
  }
  if (used) {
    line[used] = '\0';
    count_line(line, used);
  }
  return NULL;
}

static void watch_stderr(void) {
  if (pipe(g_pipe) != 0) abort();
  g_saved_stderr = dup(2);
  dup2(g_pipe[1], 2);
  close(g_pipe[1]);
  setvbuf(stderr, NULL, _IOLBF, 0);
  pthread_create(&g_reader, NULL, read_stderr, NULL);
}

static void unwatch_stderr(void) {
  fflush(stderr);
  dup2(g_saved_stderr, 2); /* closes the pipe's last write end: the reader sees EOF */
  pthread_join(g_reader, NULL);
  close(g_pipe[0]);
}

/* ---- the workload ---- */

/* A permutation of n items for this step and rank (a seeded Fisher-Yates). */
static void shuffle(int* order, int n, uint32_t seed) {
  for (int i = 0; i < n; ++i) order[i] = i;
  for (int i = n - 1; i > 0; --i) {
    seed = seed * 1664525u + 1013904223u;
    int j = (int)((seed >> 8) % (uint32_t)(i + 1));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
}

static float g_a[NA][MAX_COUNT];
static int32_t g_b[NB][MAX_COUNT];
static int32_t* g_gathered[NB];
static int64_t g_gathered_rows[NB];
static int64_t g_rows_per_rank[NB][64];
static hvd_handle_t g_ha[NA], g_hb[NB];

static int64_t count_a(int t) { return 1 + (t * 37) % MAX_COUNT; }
static int64_t count_b(int t) { return 2 + (t * 53) % (MAX_COUNT - 2); }
/* B tensors: broadcast, allgather (rows change with the step: a cached spec goes stale),
 * allreduce MAX on int32. */
static int kind_b(int t) { return t % 4 == 0 ? 0 : t % 4 == 1 ? 1 : 2; }
static int64_t gather_rows(int rank, int t, int step) { return 1 + (rank + t + step) % 3; }

static void enqueue_a(int t, int step) {
  const int rank = hvd_rank();
  for (int64_t i = 0; i < count_a(t); ++i) g_a[t][i] = (float)(rank + t + step % 5 + i % 3);
  char name[32];
  snprintf(name, sizeof name, "a.%d", t);
  assert_hvd_ok(hvd_allreduce_async(g_a[t], g_a[t], count_a(t), HVD_FLOAT32, HVD_OP_SUM, name,
                                    NULL, &g_ha[t]));
}

static void check_a(int t, int step) {
  const int size = hvd_size();
  assert_hvd_ok(hvd_wait(g_ha[t]));
  for (int64_t i = 0; i < count_a(t); ++i) {
    float want = (float)(size * (t + step % 5 + i % 3) + size * (size - 1) / 2);
    if (g_a[t][i] != want)
      fail_msg("step %d a.%d[%lld]: %g, expected %g", step, t, (long long)i, g_a[t][i], want);
  }
}

static void enqueue_b(int t, int step) {
  const int rank = hvd_rank(), size = hvd_size();
  char name[32];
  snprintf(name, sizeof name, "b.%d", t);
  switch (kind_b(t)) {
    case 0: {
      int root = (t / 4 + step) % size;
      for (int64_t i = 0; i < count_b(t); ++i)
        g_b[t][i] = rank == root ? (int32_t)(1000 * step + t + i) : -1;
      assert_hvd_ok(hvd_broadcast_async(g_b[t], count_b(t), HVD_INT32, root, name, NULL,
                                        &g_hb[t]));
      break;
    }
    case 1: {
      int64_t shape[2] = {gather_rows(rank, t, step), 2};
      for (int64_t j = 0; j < shape[0]; ++j)
        for (int c = 0; c < 2; ++c) g_b[t][j * 2 + c] = (int32_t)(rank * 100 + j * 10 + c + step);
      assert_hvd_ok(hvd_allgather_async(g_b[t], 2, shape, HVD_INT32, (void**)&g_gathered[t],
                                        &g_gathered_rows[t], g_rows_per_rank[t], name, NULL,
                                        &g_hb[t]));
      break;
    }
    default:
      for (int64_t i = 0; i < count_b(t); ++i) g_b[t][i] = (int32_t)(rank * 7 + t + i + step);
      assert_hvd_ok(hvd_allreduce_async(g_b[t], g_b[t], count_b(t), HVD_INT32, HVD_OP_MAX, name,
                                        NULL, &g_hb[t]));
  }
}

static void check_b(int t, int step) {
  const int size = hvd_size();
  assert_hvd_ok(hvd_wait(g_hb[t]));
  switch (kind_b(t)) {
    case 0: {
      for (int64_t i = 0; i < count_b(t); ++i)
        if (g_b[t][i] != (int32_t)(1000 * step + t + i))
          fail_msg("step %d broadcast b.%d[%lld]: %d", step, t, (long long)i, g_b[t][i]);
      break;
    }
    case 1: {
      int64_t row = 0;
      for (int r = 0; r < size; ++r) {
        int64_t rows = gather_rows(r, t, step);
        if (g_rows_per_rank[t][r] != rows)
          fail_msg("step %d allgather b.%d: rank %d gave %lld rows, expected %lld", step, t, r,
                   (long long)g_rows_per_rank[t][r], (long long)rows);
        for (int64_t j = 0; j < rows; ++j, ++row)
          for (int c = 0; c < 2; ++c)
            if (g_gathered[t][row * 2 + c] != (int32_t)(r * 100 + j * 10 + c + step))
              fail_msg("step %d allgather b.%d: row %lld of rank %d wrong", step, t,
                       (long long)j, r);
      }
      if (g_gathered_rows[t] != row) fail_msg("step %d allgather b.%d: %lld rows", step, t,
                                              (long long)g_gathered_rows[t]);
      hvd_free(g_gathered[t]);
      g_gathered[t] = NULL;
      break;
    }
    default:
      for (int64_t i = 0; i < count_b(t); ++i)
        if (g_b[t][i] != (int32_t)((size - 1) * 7 + t + i + step))
          fail_msg("step %d max b.%d[%lld]: %d", step, t, (long long)i, g_b[t][i]);
  }
}

static void results_stay_exact_across_switches(void** state) {
  (void)state;
  const int rank = hvd_rank();
  if (hvd_size() > 64) skip();
  int order_a[NA], order_b[NB], wait_a[NA];
  for (int step = 0; step < STEPS; ++step) {
    const uint32_t seed = (uint32_t)(step * 7919 + rank * 104729 + 1);
    shuffle(order_a, NA, seed);
    shuffle(order_b, NB, seed * 31u + 7u);
    shuffle(wait_a, NA, seed * 17u + 3u);
    /* Most steps hold back part of B until A is done, a different part on each rank;
     * every fifth step submits everything at once. */
    const int early_b = step % 5 == 4 ? NB : (int)((seed >> 4) % (NB + 1));
    for (int k = 0; k < NA; ++k) enqueue_a(order_a[k], step);
    for (int k = 0; k < early_b; ++k) enqueue_b(order_b[k], step);
    for (int k = 0; k < NA; ++k) check_a(wait_a[k], step);
    for (int k = early_b; k < NB; ++k) enqueue_b(order_b[k], step);
    for (int k = NB - 1; k >= 0; --k) check_b(order_b[k], step);
  }
}

static void the_cache_did_switch(void** state) {
  (void)state;
  const int rank = hvd_rank();
  assert_hvd_ok(hvd_shutdown());
  unwatch_stderr();
  printf("rank %d: response cache switched off %d times, on %d times\n", rank, g_switched_off,
         g_switched_on);
  if (g_switched_off < MIN_SWITCHES || g_switched_on < MIN_SWITCHES)
    fail_msg("rank %d: the cache switched off %d and on %d times; expected at least %d each "
             "(is HVD_CACHE_TOGGLE_ROUNDS set and HOROVOD_LOG_LEVEL=debug?)",
             rank, g_switched_off, g_switched_on, MIN_SWITCHES);
}

int main(void) {
  watch_stderr();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(results_stay_exact_across_switches),
      cmocka_unit_test(the_cache_did_switch),
  };
  return cmocka_run_group_tests_name("cache_switch", tests, tu_group_init, NULL);
}
