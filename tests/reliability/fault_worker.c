/*
 * A rank for the fault tests: allreduces in a loop and checks every result. After
 * its first allreduce it writes its pid to DIR/rank.R (atomically, by rename), so
 * the driver knows the job is running and whom to kill. It runs until killed; if
 * nothing kills it, it gives up after a bound, so a broken test cannot leave it
 * running for ever.
 *
 *   fault_worker DIR
 *   fault_worker DIR stuck-op R stop|sleep   rank R never finishes an allgather
 *   fault_worker DIR stop-at-exit R 0        after hvd_shutdown rank R stops (SIGSTOP)
 *                                            instead of exiting; the others exit, and
 *                                            their MPI_Finalize waits for it
 *   fault_worker DIR slow-op 0 N             ranks 0 and 1 allreduce N MiB on a set of
 *                                            their own, slowly (HVD_TEST_PROGRESS_DELAY_MS);
 *                                            the others wait for them in negotiation
 *   fault_worker DIR slow-gather 0 N         the same with an allgather of N MiB from
 *                                            each of ranks 0 and 1
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hvd/hvd.h>

enum { kCount = 4096, kLifetimeSeconds = 240 };

static void announce(const char* dir, int rank) {
  char tmp[4096], path[4096];
  snprintf(tmp, sizeof tmp, "%s/.rank.%d.tmp", dir, rank);
  snprintf(path, sizeof path, "%s/rank.%d", dir, rank);
  FILE* f = fopen(tmp, "w");
  if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
    perror("fault_worker: announce");
    exit(3);
  }
}

/* The launcher's rank, readable before hvd_init (MPICH, Open MPI). */
static int launcher_rank(void) {
  const char* v = getenv("PMI_RANK");
  if (!v) v = getenv("OMPI_COMM_WORLD_RANK");
  return v ? atoi(v) : -1;
}

static int g_stuck_mode_stop = 0;

/* Never returns in the stuck rank: the peers' allgatherv waits on it. */
static void* stuck_allocator(size_t bytes, int device, void* user_data) {
  (void)device;
  (void)user_data;
  if (g_stuck_mode_stop) raise(SIGSTOP);
  for (time_t start = time(NULL); time(NULL) - start < kLifetimeSeconds;) sleep(1);
  fprintf(stderr, "fault_worker: nobody ended the stuck job\n");
  exit(4);
  return malloc(bytes);
}

static int stuck_op(const char* dir, int stuck_rank, int stop) {
  const int rank = hvd_rank();
  float row[4096] = {0};
  const int64_t shape[1] = {1};
  hvd_op_options_t options;
  hvd_op_options_init(&options);
  if (rank == stuck_rank) {
    g_stuck_mode_stop = stop;
    options.allocator = stuck_allocator;
  }
  announce(dir, rank);
  void* out = NULL;
  int64_t rows = 0;
  hvd_status_t st = hvd_allgather(row, 1, shape, HVD_FLOAT32, &out, &rows, NULL,
                                  "watchdog.gather", &options);
  fprintf(stderr, "fault_worker rank %d: the stuck allgather returned (%s)\n", rank,
          st == HVD_SUCCESS ? "success" : hvd_last_error());
  return 5;
}

/* slow_op's allreduce: ranks 0 and 1 sum count floats of rank + 1 in place. */
static int slow_allreduce(int rank, int64_t count, float* buf, int32_t set) {
  hvd_op_options_t options;
  hvd_op_options_init(&options);
  options.process_set_id = set;
  hvd_handle_t handle;
  hvd_status_t st = hvd_allreduce_async(buf, buf, count, HVD_FLOAT32, HVD_OP_SUM,
                                        "watchdog.slow", &options, &handle);
  if (st == HVD_SUCCESS) st = hvd_wait(handle);
  if (st != HVD_SUCCESS) {
    fprintf(stderr, "fault_worker rank %d: the slow allreduce failed: %s\n", rank, hvd_last_error());
    return 1;
  }
  for (int64_t i = 0; i < count; ++i)
    if (buf[i] != 3.0f) {
      fprintf(stderr, "fault_worker rank %d: element %lld is %g, want 3\n", rank, (long long)i, buf[i]);
      return 1;
    }
  return 0;
}

/* slow_op's allgather: ranks 0 and 1 each send count floats of rank + 1. */
static int slow_gather(int rank, int64_t count, const float* mine, int32_t set) {
  hvd_op_options_t options;
  hvd_op_options_init(&options);
  options.process_set_id = set;
  const int64_t shape[1] = {count};
  void* out = NULL;
  int64_t rows = 0;
  hvd_status_t st = hvd_allgather(mine, 1, shape, HVD_FLOAT32, &out, &rows, NULL,
                                  "watchdog.slow.gather", &options);
  if (st != HVD_SUCCESS) {
    fprintf(stderr, "fault_worker rank %d: the slow allgather failed: %s\n", rank, hvd_last_error());
    return 1;
  }
  for (int64_t i = 0; i < 2 * count; ++i)
    if (((float*)out)[i] != (float)(i / count + 1)) {
      fprintf(stderr, "fault_worker rank %d: element %lld is %g, want %g\n", rank, (long long)i,
              ((float*)out)[i], (float)(i / count + 1));
      return 1;
    }
  hvd_free(out);
  return 0;
}

/* Ranks 0 and 1 allreduce (or allgather) mib MiB on their own process set while it
   progresses slowly; rank 2 meanwhile waits in a barrier. Nothing may end the job. */
static int slow_op(const char* dir, int mib, int gather) {
  const int rank = hvd_rank();
  const int pair[2] = {0, 1};
  int32_t set = -1;
  if (hvd_add_process_set(pair, 2, &set) != HVD_SUCCESS) {
    fprintf(stderr, "fault_worker: hvd_add_process_set: %s\n", hvd_last_error());
    return 1;
  }
  announce(dir, rank);
  if (rank <= 1) {
    const int64_t count = (int64_t)mib * 1024 * 1024 / 4;
    float* buf = malloc((size_t)count * sizeof(float));
    if (!buf) return 1;
    for (int64_t i = 0; i < count; ++i) buf[i] = (float)(rank + 1);
    const int failed = gather ? slow_gather(rank, count, buf, set) : slow_allreduce(rank, count, buf, set);
    free(buf);
    if (failed) return 1;
  }
  /* Rank 2's barrier waits for ranks 0 and 1 in its negotiation rounds all along. */
  if (hvd_barrier(HVD_GLOBAL_PROCESS_SET) != HVD_SUCCESS) {
    fprintf(stderr, "fault_worker rank %d: hvd_barrier: %s\n", rank, hvd_last_error());
    return 1;
  }
  fprintf(stderr, "fault_worker rank %d: done\n", rank);
  return hvd_shutdown() == HVD_SUCCESS ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 5) {
    fprintf(stderr, "usage: fault_worker DIR [before-init|after-init R CODE | stuck-op R stop|sleep |\n"
                    "                         slow-op|slow-gather 0 MIB | stop-at-exit R 0]\n");
    return 2;
  }
  const char* mode = argc == 5 ? argv[2] : "loop";
  const int mode_rank = argc == 5 ? atoi(argv[3]) : -1;
  if (strcmp(mode, "before-init") == 0 && launcher_rank() == mode_rank) {
    fprintf(stderr, "fault_worker rank %d: failing before hvd_init\n", mode_rank);
    return atoi(argv[4]);
  }
  if (hvd_init() != HVD_SUCCESS) {
    fprintf(stderr, "fault_worker: hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  const int rank = hvd_rank(), size = hvd_size();
  if (strcmp(mode, "stuck-op") == 0) {
    float warm = 1;
    hvd_allreduce(&warm, &warm, 1, HVD_FLOAT32, HVD_OP_SUM, "watchdog.warmup");
    return stuck_op(argv[1], mode_rank, strcmp(argv[4], "stop") == 0);
  }
  if (strcmp(mode, "slow-op") == 0) return slow_op(argv[1], atoi(argv[4]), 0);
  if (strcmp(mode, "slow-gather") == 0) return slow_op(argv[1], atoi(argv[4]), 1);
  if (strcmp(mode, "stop-at-exit") == 0) {
    announce(argv[1], rank);
    if (hvd_shutdown() != HVD_SUCCESS) {
      fprintf(stderr, "fault_worker rank %d: hvd_shutdown: %s\n", rank, hvd_last_error());
      return 1;
    }
    if (rank == mode_rank) raise(SIGSTOP);
    return 0;  /* libhvd's exit handler calls MPI_Finalize */
  }
  static float buf[kCount];
  const time_t start = time(NULL);
  for (long iter = 0;; ++iter) {
    for (int i = 0; i < kCount; ++i) buf[i] = (float)(rank + i % 7);
    hvd_status_t st = hvd_allreduce(buf, buf, kCount, HVD_FLOAT32, HVD_OP_SUM, "fault.loop");
    if (st != HVD_SUCCESS) {
      /* Expected once a peer is gone: report and stop. */
      fprintf(stderr, "fault_worker rank %d: allreduce %ld: %s\n", rank, iter, hvd_last_error());
      return 1;
    }
    for (int i = 0; i < kCount; ++i) {
      float want = (float)(size * (size - 1) / 2 + size * (i % 7));
      if (buf[i] != want) {
        fprintf(stderr, "fault_worker rank %d: element %d is %g, want %g\n", rank, i, buf[i], want);
        return 1;
      }
    }
    if (iter == 0) announce(argv[1], rank);
    if (strcmp(mode, "after-init") == 0 && rank == mode_rank) {
      fprintf(stderr, "fault_worker rank %d: failing after hvd_init\n", rank);
      return atoi(argv[4]);
    }
    if (time(NULL) - start > kLifetimeSeconds) {
      fprintf(stderr, "fault_worker rank %d: nobody stopped the job\n", rank);
      return 4;
    }
  }
}
