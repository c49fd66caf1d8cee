/*
 * The fault workers' loop: hvd_init, then one tensor allreduced for ever, every result
 * checked. before(iter, rank, arg) runs before each allreduce, so a worker can tell
 * its driver where it stands. Returns the process's exit status: 1 once an allreduce
 * fails (expected when a peer is gone) or a result is wrong, 4 if nothing ended the
 * job within lifetime_seconds, so a broken test cannot leave it running for ever.
 */
#ifndef HVD_TESTS_ALLREDUCE_LOOP_H
#define HVD_TESTS_ALLREDUCE_LOOP_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <hvd/hvd.h>

typedef void (*loop_hook_fn)(long iter, int rank, void* arg);

static int allreduce_loop(const char* who, int count, const char* tensor, int lifetime_seconds,
                          loop_hook_fn before, void* arg) {
  if (hvd_init() != HVD_SUCCESS) {
    fprintf(stderr, "%s: hvd_init: %s\n", who, hvd_last_error());
    return 1;
  }
  const int rank = hvd_rank(), size = hvd_size();
  float* buf = malloc(sizeof(float) * (size_t)count);
  if (!buf) return 3;
  const time_t start = time(NULL);
  for (long iter = 0;; ++iter) {
    for (int i = 0; i < count; ++i) buf[i] = (float)(rank + i % 7);
    if (before) before(iter, rank, arg);
    hvd_status_t st = hvd_allreduce(buf, buf, count, HVD_FLOAT32, HVD_OP_SUM, tensor);
    if (st != HVD_SUCCESS) {
      fprintf(stderr, "%s rank %d: allreduce %ld: %s\n", who, rank, iter, hvd_last_error());
      return 1;
    }
    for (int i = 0; i < count; ++i) {
      float want = (float)(size * (size - 1) / 2 + size * (i % 7));
      if (buf[i] != want) {
        fprintf(stderr, "%s rank %d: element %d is %g, want %g\n", who, rank, i, buf[i], want);
        return 1;
      }
    }
    if (time(NULL) - start > lifetime_seconds) {
      fprintf(stderr, "%s rank %d: nobody ended the job\n", who, rank);
      return 4;
    }
  }
}

#endif
