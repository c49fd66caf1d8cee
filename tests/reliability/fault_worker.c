/*
 * A rank for the fault tests: allreduces in a loop and checks every result. After
 * its first allreduce it writes its pid to DIR/rank.R (atomically, by rename), so
 * the driver knows the job is running and whom to kill. It runs until killed; if
 * nothing kills it, it gives up after a bound, so a broken test cannot leave it
 * running for ever.
 *
 *   fault_worker DIR
 */
#include <stdio.h>
#include <stdlib.h>
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

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fault_worker DIR\n");
    return 2;
  }
  if (hvd_init() != HVD_SUCCESS) {
    fprintf(stderr, "fault_worker: hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  const int rank = hvd_rank(), size = hvd_size();
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
    if (time(NULL) - start > kLifetimeSeconds) {
      fprintf(stderr, "fault_worker rank %d: nobody stopped the job\n", rank);
      return 4;
    }
  }
}
