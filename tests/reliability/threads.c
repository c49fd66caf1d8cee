/*
 * Every user thread at once, for ThreadSanitizer above all: the paths that user
 * threads and the background thread share without a lock in common.
 *
 *  - 4 worker threads enqueue asynchronous allreduces (global set and a static
 *    subset), broadcasts and allgathers (output allocated by the background thread,
 *    read and freed by the worker), and wait for them, or poll them to completion first;
 *    handles are reused from the pool all the time (slot + generation). After its
 *    wait a handle must be unknown to hvd_poll.
 *  - A prober thread polls the workers' latest handles while they wait on them (each
 *    poll must say done / not done, or unknown once waited), and queries ranks and
 *    set sizes (the lock-free global set lookup).
 *  - The main thread adds a process set, allreduces on it and removes it again and
 *    again while the workers run, and runs its own MPI_Allreduce on its own
 *    communicator in between (MPI_THREAD_MULTIPLE).
 *
 * Every result is checked. A watchdog ends the process with a message if anything
 * hangs, before the suite's timeout.
 *
 *   mpiexec -n 2 threads [ITERATIONS]      (default 60 per worker)
 */
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hvd/hvd.h>

#include "../test_timeouts.h"

enum { kWorkers = 4, kWatchdogSeconds = 240, kDynamicRounds = 10 };

static int g_iterations = 60;
static int g_rank, g_size;
static int32_t g_static_set;      /* ranks 0 .. size-2 */
static int g_static_members;

static atomic_int g_failures;
static atomic_int g_workers_done;
static _Atomic hvd_handle_t g_published[kWorkers];
static atomic_long g_probes;

static void failure(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void failure(const char* fmt, ...) {
  char text[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  fprintf(stderr, "rank %d: FAIL: %s\n", g_rank, text);
  atomic_fetch_add(&g_failures, 1);
}

#define CHECK_OK(expr)                                                                  \
  do {                                                                                  \
    hvd_status_t st_ = (expr);                                                          \
    if (st_ != HVD_SUCCESS) failure("%s -> %s: %s", #expr, hvd_status_string(st_),      \
                                    hvd_last_error());                                  \
  } while (0)

static void on_watchdog(int sig) {
  (void)sig;
  static const char text[] = "threads: watchdog: no progress, something hangs\n";
  (void)!write(2, text, sizeof text - 1);
  _exit(1);
}

/* Polls until done (yielding), then waits; the two ways a user finishes a handle. */
static void finish(hvd_handle_t handle, int poll_first, const char* what) {
  if (poll_first) {
    int done = 0;
    while (!done) {
      hvd_status_t st = hvd_poll(handle, &done);
      if (st != HVD_SUCCESS) {
        failure("poll of live %s -> %s: %s", what, hvd_status_string(st), hvd_last_error());
        return;
      }
      if (!done) sched_yield();
    }
  }
  hvd_status_t st = hvd_wait(handle);
  if (st != HVD_SUCCESS) failure("wait %s -> %s: %s", what, hvd_status_string(st), hvd_last_error());
  int done = -1;
  if (hvd_poll(handle, &done) != HVD_ERR_INVALID_ARGUMENT)
    failure("%s: a waited handle is still known to hvd_poll", what);
}

static void* worker(void* arg) {
  const int t = (int)(intptr_t)arg;
  const int member = g_rank < g_static_members;
  hvd_op_options_t on_set;
  hvd_op_options_init(&on_set);
  on_set.process_set_id = g_static_set;
  for (int i = 0; i < g_iterations; ++i) {
    double global[5], subset[5];
    int32_t bcast[3];
    const int root = i % g_size;
    for (int k = 0; k < 5; ++k) global[k] = subset[k] = g_rank + t + i + k;
    for (int j = 0; j < 3; ++j) bcast[j] = g_rank == root ? t * 1000 + i + j : -1;
    char name_g[48], name_s[48], name_b[48];
    snprintf(name_g, sizeof name_g, "w%d.global.%d", t, i);
    snprintf(name_s, sizeof name_s, "w%d.subset.%d", t, i);
    snprintf(name_b, sizeof name_b, "w%d.bcast.%d", t, i);

    /* Rank r contributes r + 1 rows of 2 elements, each r * 100 + i. */
    int32_t rows[2 * 64];
    for (int e = 0; e < 2 * (g_rank + 1); ++e) rows[e] = g_rank * 100 + i;
    const int64_t shape[2] = {g_rank + 1, 2};
    void* gathered = NULL;
    int64_t gathered_rows = -1;
    char name_a[48];
    snprintf(name_a, sizeof name_a, "w%d.gather.%d", t, i);

    hvd_handle_t hg = 0, hs = 0, hb = 0, ha = 0;
    CHECK_OK(hvd_allreduce_async(global, global, 5, HVD_FLOAT64, HVD_OP_SUM, name_g, NULL, &hg));
    if (member)
      CHECK_OK(hvd_allreduce_async(subset, subset, 5, HVD_FLOAT64, HVD_OP_SUM, name_s, &on_set,
                                   &hs));
    CHECK_OK(hvd_broadcast_async(bcast, 3, HVD_INT32, root, name_b, NULL, &hb));
    CHECK_OK(hvd_allgather_async(rows, 2, shape, HVD_INT32, &gathered, &gathered_rows, NULL,
                                 name_a, NULL, &ha));
    atomic_store(&g_published[t], hg);

    const int poll_first = i % 2;
    finish(hg, poll_first, name_g);
    if (member) finish(hs, !poll_first, name_s);
    finish(hb, poll_first, name_b);
    finish(ha, !poll_first, name_a);

    const int m = g_static_members;
    for (int k = 0; k < 5; ++k) {
      const double want = (double)g_size * (t + i + k) + g_size * (g_size - 1) / 2.0;
      if (global[k] != want) failure("%s[%d]: got %g want %g", name_g, k, global[k], want);
      const double want_s = (double)m * (t + i + k) + m * (m - 1) / 2.0;
      if (member && subset[k] != want_s)
        failure("%s[%d]: got %g want %g", name_s, k, subset[k], want_s);
    }
    for (int j = 0; j < 3; ++j)
      if (bcast[j] != t * 1000 + i + j)
        failure("%s[%d]: got %d want %d", name_b, j, bcast[j], t * 1000 + i + j);
    const int64_t want_rows = (int64_t)g_size * (g_size + 1) / 2;
    if (gathered_rows != want_rows || gathered == NULL) {
      failure("%s: %lld rows, want %lld", name_a, (long long)gathered_rows,
              (long long)want_rows);
    } else {
      const int32_t* out = gathered;
      int64_t row = 0;
      for (int r = 0; r < g_size; ++r)
        for (int k = 0; k <= r; ++k, ++row)
          for (int e = 0; e < 2; ++e)
            if (out[row * 2 + e] != r * 100 + i)
              failure("%s row %lld: got %d want %d", name_a, (long long)row,
                      out[row * 2 + e], r * 100 + i);
    }
    hvd_free(gathered);
  }
  atomic_fetch_add(&g_workers_done, 1);
  return NULL;
}

static void* prober(void* arg) {
  (void)arg;
  while (atomic_load(&g_workers_done) < kWorkers) {
    for (int t = 0; t < kWorkers; ++t) {
      const hvd_handle_t handle = atomic_load(&g_published[t]);
      if (handle == 0) continue;
      int done = -1;
      const hvd_status_t st = hvd_poll(handle, &done);
      /* The worker may have waited for it already: then the handle is unknown. */
      if (st == HVD_SUCCESS ? (done != 0 && done != 1) : st != HVD_ERR_INVALID_ARGUMENT)
        failure("poll of a worker's handle -> %s, done %d", hvd_status_string(st), done);
    }
    if (hvd_size() != g_size || hvd_rank() != g_rank)
      failure("rank/size changed while running: %d/%d", hvd_rank(), hvd_size());
    if (hvd_process_set_size(0) != g_size) failure("global set size %d", hvd_process_set_size(0));
    if (hvd_process_set_size(g_static_set) != g_static_members)
      failure("static set size %d", hvd_process_set_size(g_static_set));
    atomic_fetch_add(&g_probes, 1);
    /* Often, but leaving the cores to the ranks' other threads (2 cores, 3 ranks). */
    const struct timespec pause = {0, 20000};
    nanosleep(&pause, NULL);
  }
  return NULL;
}

/* On the main thread while the workers run: sets come and go, and the application
 * uses MPI itself. */
static void churn_sets_and_mpi(MPI_Comm mine) {
  int ranks[64];
  const int n = g_size - 1; /* ranks 1 .. size-1 */
  for (int r = 0; r < n; ++r) ranks[r] = r + 1;
  for (int round = 0; round < kDynamicRounds; ++round) {
    int32_t id = -1;
    CHECK_OK(hvd_add_process_set(ranks, n, &id));
    if (id > 0 && g_rank >= 1) {
      double v = g_rank;
      char name[32];
      snprintf(name, sizeof name, "dynamic.%d", round);
      hvd_op_options_t opts;
      hvd_op_options_init(&opts);
      opts.process_set_id = id;
      hvd_handle_t h = 0;
      CHECK_OK(hvd_allreduce_async(&v, &v, 1, HVD_FLOAT64, HVD_OP_SUM, name, &opts, &h));
      CHECK_OK(hvd_wait(h));
      const double want = g_size * (g_size - 1) / 2.0;
      if (v != want) failure("%s: got %g want %g", name, v, want);
    }
    if (id > 0) CHECK_OK(hvd_remove_process_set(id));
    int one = 1, sum = 0;
    if (MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, mine) != MPI_SUCCESS || sum != g_size)
      failure("application MPI_Allreduce: sum %d, want %d", sum, g_size);
  }
}

int main(int argc, char** argv) {
  if (argc > 1) g_iterations = atoi(argv[1]);
  if (g_iterations <= 0) {
    fprintf(stderr, "usage: threads [ITERATIONS > 0]\n");
    return 2;
  }
  signal(SIGALRM, on_watchdog);
  alarm(test_timeout_seconds(kWatchdogSeconds));

  if (hvd_init() != HVD_SUCCESS) {
    fprintf(stderr, "hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  g_rank = hvd_rank();
  g_size = hvd_size();
  if (g_size < 2 || g_size > 64) {
    fprintf(stderr, "threads needs 2 to 64 ranks, got %d\n", g_size);
    return 1;
  }
  int provided = -1;
  MPI_Query_thread(&provided);
  if (provided != MPI_THREAD_MULTIPLE) failure("MPI thread level %d, not MULTIPLE", provided);

  g_static_members = g_size - 1;
  int ranks[64];
  for (int r = 0; r < g_static_members; ++r) ranks[r] = r;
  CHECK_OK(hvd_add_process_set(ranks, g_static_members, &g_static_set));
  MPI_Comm mine;
  MPI_Comm_dup(MPI_COMM_WORLD, &mine);

  pthread_t workers[kWorkers], probe;
  for (int t = 0; t < kWorkers; ++t)
    if (pthread_create(&workers[t], NULL, worker, (void*)(intptr_t)t) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 1;
    }
  if (pthread_create(&probe, NULL, prober, NULL) != 0) return 1;
  churn_sets_and_mpi(mine);
  for (int t = 0; t < kWorkers; ++t) pthread_join(workers[t], NULL);
  pthread_join(probe, NULL);

  MPI_Comm_free(&mine);
  CHECK_OK(hvd_remove_process_set(g_static_set));
  CHECK_OK(hvd_shutdown());
  const int failures = atomic_load(&g_failures);
  printf("rank %d: %d workers x %d iterations, %d set rounds, %ld probes: %s\n", g_rank,
         kWorkers, g_iterations, kDynamicRounds, atomic_load(&g_probes),
         failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
