/*
 * A rank for the lab's fault tests: allreduces one large tensor in a loop and checks
 * every result. Rank 0 writes one line to READY (a named pipe the driver reads) just
 * before the third allreduce, when connections are made and the tensor is cached, so
 * the driver strikes while that allreduce is moving bytes.
 *
 *   fault_worker READY
 */
#include <stdio.h>
#include <stdlib.h>

#include "../reliability/allreduce_loop.h"

/* 32 MiB: at the driver's link rate one allreduce takes about a second. */
enum { kCount = 8 << 20, kReadyIteration = 2, kLifetimeSeconds = 200 };
static const char kTensor[] = "netlab.fault.large";

static void tell_ready(long iter, int rank, void* arg) {
  if (iter != kReadyIteration || rank != 0) return;
  FILE* f = fopen((const char*)arg, "w");
  if (!f || fprintf(f, "allreduce of %s under way\n", kTensor) < 0 || fclose(f) != 0) {
    perror("fault_worker: ready pipe");
    exit(3);
  }
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fault_worker READY\n");
    return 2;
  }
  return allreduce_loop("fault_worker", kCount, kTensor, kLifetimeSeconds, tell_ready, argv[1]);
}
