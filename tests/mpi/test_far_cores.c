/* Large allreduces cut for the ranks' cores (HVD_FAR_CORES): every element of large
 * tensors checked (in place and out of place, sums and averages, a size that leaves a
 * short last chunk) whichever chunk size is in use, and the counters that say which.
 * Usage: test_far_cores far|near|auto
 *   far:  HVD_FAR_CORES=always: every rank in far-core calls from the first round.
 *   near: never probed (HVD_FAR_CORES=never, or HVD_ALLREDUCE_CHUNK_BYTES set): no
 *         round trip measured, configured calls throughout.
 *   auto: probed where every rank has a CPU of its own (as libhvd counts them: the
 *         ranks of this one machine no more than the CPUs they may run on): local rank 0
 *         of a node with two ranks or more has measured a round trip after the job's
 *         first rounds. Elsewhere nothing is probed. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { kSmallRounds = 80 };
/* 20 MiB of floats, and 17 MiB + 3 elements: a 16 MiB chunk and a short one. */
static const int64_t kCounts[] = {5 * 1024 * 1024, 17 * 256 * 1024 + 3};

static void check_large(int step) {
  const int rank = hvd_rank(), size = hvd_size();
  for (size_t t = 0; t < sizeof kCounts / sizeof kCounts[0]; ++t) {
    const int64_t n = kCounts[t];
    float* in = malloc((size_t)n * sizeof(float));
    float* out = malloc((size_t)n * sizeof(float));
    if (!in || !out) fail_msg("out of memory");
    for (int64_t i = 0; i < n; ++i) in[i] = (float)(rank + i % 13 + step);
    char name[64];
    /* In place, summed. */
    snprintf(name, sizeof name, "far_cores.sum.%zu", t);
    assert_hvd_ok(hvd_allreduce(in, in, n, HVD_FLOAT32, HVD_OP_SUM, name));
    for (int64_t i = 0; i < n; ++i) {
      const float want = (float)(size * (i % 13 + step) + size * (size - 1) / 2);
      if (in[i] != want)
        fail_msg("sum of tensor %zu [%lld] = %g, expected %g", t, (long long)i, in[i], want);
    }
    /* Out of place, averaged: size * (values) / size, exact for these integers. */
    for (int64_t i = 0; i < n; ++i) in[i] = (float)(size * (i % 5 + step));
    snprintf(name, sizeof name, "far_cores.avg.%zu", t);
    assert_hvd_ok(hvd_allreduce(in, out, n, HVD_FLOAT32, HVD_OP_AVERAGE, name));
    for (int64_t i = 0; i < n; ++i) {
      const float want = (float)(size * (i % 5 + step));
      if (out[i] != want)
        fail_msg("average of tensor %zu [%lld] = %g, expected %g", t, (long long)i, out[i], want);
    }
    free(in);
    free(out);
  }
}

/* The CPUs the ranks may run on, all ranks together, after hvd_init's binding. */
static int cpus_of_all_ranks(void) {
  cpu_set_t mine, all;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) fail_msg("sched_getaffinity failed");
  MPI_Allreduce(&mine, &all, (int)sizeof mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
  return CPU_COUNT(&all);
}

static long long configured_chunk(void) {
  char text[64] = "";
  assert_hvd_ok(hvd_param_get("HVD_ALLREDUCE_CHUNK_BYTES", text, sizeof text));
  return atoll(text);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_far_cores far|near|auto\n");
    return 2;
  }
  const char* mode = argv[1];
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  assert_hvd_ok(hvd_init());
  /* Enough rounds for the probes at rounds 1, 2, 4, ... 64. */
  for (int r = 0; r < kSmallRounds; ++r) {
    float x = 1;
    assert_hvd_ok(hvd_allreduce(&x, &x, 1, HVD_FLOAT32, HVD_OP_SUM, "far_cores.small"));
  }
  for (int step = 0; step < 2; ++step) check_large(step);
  const hvd_counters_t c = tu_counters();
  const int own_cpus = hvd_size() <= cpus_of_all_ranks();

  int far = (int)c.far_cores, far_min = 0, far_max = 0;
  MPI_Allreduce(&far, &far_min, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&far, &far_max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  if (strcmp(mode, "far") == 0) {
    if (far_min != 1) fail_msg("HVD_FAR_CORES=always: far_cores is %d on some rank", far_min);
    if (c.core_round_trip_ns != 0) fail_msg("always: no probe expected, got %llu ns", (unsigned long long)c.core_round_trip_ns);
  } else if (strcmp(mode, "near") == 0) {
    if (far_max != 0) fail_msg("never probed: far_cores is %d on some rank", far_max);
    if (c.core_round_trip_ns != 0) fail_msg("never probed: a round trip of %llu ns", (unsigned long long)c.core_round_trip_ns);
  } else if (strcmp(mode, "auto") == 0 && (configured_chunk() >= (16 << 20) || !own_cpus)) {
    /* Calls already 16 MiB (Open MPI's default), or ranks that share CPUs: nothing
     * switches, nothing is probed. */
    if (far_max != 0 || c.core_round_trip_ns != 0)
      fail_msg("auto, %s: far_cores %d, round trip %llu ns; expected neither",
               own_cpus ? "16 MiB chunks" : "ranks sharing CPUs", far_max,
               (unsigned long long)c.core_round_trip_ns);
  } else if (strcmp(mode, "auto") == 0) {
    /* Which placement the probes found is the machine's; that it was measured (on a
     * node's local rank 0 with a peer) and that the ranks' chunk sizes agree at the
     * end are the library's. */
    if (local_rank == 0 && local_size >= 2 && c.core_round_trip_ns == 0)
      fail_msg("auto: local rank 0 of %d measured no round trip in %d rounds", local_size, kSmallRounds);
    if (local_rank != 0 && c.core_round_trip_ns != 0)
      fail_msg("auto: local rank %d reports a round trip (only local rank 0 measures)", local_rank);
    if (hvd_rank() == 0)
      printf("round trip %llu ns, far cores %d\n", (unsigned long long)c.core_round_trip_ns, far);
  } else {
    fail_msg("unknown mode %s", mode);
  }
  assert_hvd_ok(hvd_shutdown());
  MPI_Finalize();
  return 0;
}
