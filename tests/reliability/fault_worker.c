/*
 * A rank for the fault tests: allreduces in a loop and checks every result. After
 * its first allreduce it writes its pid to DIR/rank.R (atomically, by rename), so
 * the driver knows the job is running and whom to kill. It runs until killed; if
 * nothing kills it, it gives up after a bound, so a broken test cannot leave it
 * running for ever.
 *
 *   fault_worker DIR
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

int main(int argc, char** argv) {
  if (argc != 2 && argc != 5) {
    fprintf(stderr, "usage: fault_worker DIR [before-init|after-init R CODE | stuck-op R stop|sleep]\n");
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
