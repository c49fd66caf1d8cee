#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
/* Whether a fused batch goes through libhvd's own ring (hvd_counters_t.ring_allreduces)
 * as HVD_FUSED_RING says: `ring`, `no-ring`, or `auto`. For auto the test works the
 * answer out itself: the ring is taken for a batch of 64 KiB and more when the ranks
 * span several nodes (hostnames, as MPI sees them) and the ranks of each machine have
 * a CPU each. Every rank of these tests runs on this one machine (Hydra's fake hosts,
 * the network lab's namespaces), so that is: world size <= the CPUs the ranks may run
 * on after hvd_init (which may have bound them), all together. The results are checked
 * either way.
 * Usage: test_ring_choice ring|no-ring|auto */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

enum { kTensors = 32, kCount = 4096, kSteps = 3 }; /* a batch of 512 KiB of float32 */

static const char* g_expect = "auto";
/* The CPUs the ranks may run on, all ranks together: after hvd_init, whose binding
 * (HVD_CPU_BIND=auto shares a node's cores among its ranks) is what they run with. */
static int count_cpus_of_all_ranks(void) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) fail_msg("sched_getaffinity failed");
  cpu_set_t all;
  MPI_Allreduce(&mine, &all, (int)sizeof mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
  return CPU_COUNT(&all);
}

static int spans_nodes(void) {
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_size, world_size;
  MPI_Comm_size(local, &local_size);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm_free(&local);
  return local_size < world_size;
}

static void fused_steps(void) {
  static float data[kTensors][kCount];
  const int rank = hvd_rank(), size = hvd_size();
  char name[64];
  for (int step = 0; step < kSteps; ++step) {
    hvd_handle_t handles[kTensors];
    for (int t = 0; t < kTensors; ++t) {
      for (int i = 0; i < kCount; ++i) data[t][i] = (float)(rank + t + i % 7 + step);
      snprintf(name, sizeof name, "ring_choice.%d", t);
      assert_hvd_ok(hvd_allreduce_async(data[t], data[t], kCount, HVD_FLOAT32, HVD_OP_SUM, name,
                                        NULL, &handles[t]));
    }
    for (int t = 0; t < kTensors; ++t) assert_hvd_ok(hvd_wait(handles[t]));
    for (int t = 0; t < kTensors; ++t)
      for (int i = 0; i < kCount; ++i) {
        const float want = (float)(size * (t + i % 7 + step) + size * (size - 1) / 2);
        if (data[t][i] != want)
          fail_msg("step %d tensor %d [%d] = %g, expected %g", step, t, i, data[t][i], want);
      }
  }
}

static void the_ring_is_taken_as_the_setting_says(void** state) {
  (void)state;
  const int nodes = spans_nodes();
  const int cpus = count_cpus_of_all_ranks();
  int expect_ring;
  if (strcmp(g_expect, "ring") == 0) expect_ring = hvd_size() > 1;
  else if (strcmp(g_expect, "no-ring") == 0) expect_ring = 0;
  else expect_ring = nodes && hvd_size() <= cpus;
  const uint64_t before = tu_counters().ring_allreduces;
  fused_steps();
  const uint64_t rings = tu_counters().ring_allreduces - before;
  if (hvd_rank() == 0)
    printf("# %s: %d ranks, %s, %d CPUs: %llu ring allreduces in %d steps\n", g_expect,
           hvd_size(), nodes ? "several nodes" : "one node", cpus,
           (unsigned long long)rings, kSteps);
  if (expect_ring && rings == 0) fail_msg("no batch went through the ring (%s)", g_expect);
  if (!expect_ring && rings != 0)
    fail_msg("%llu batches went through the ring (%s)", (unsigned long long)rings, g_expect);
}

int main(int argc, char** argv) {
  if (argc > 1) g_expect = argv[1];
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_ring_is_taken_as_the_setting_says),
  };
  int failed = cmocka_run_group_tests_name("ring_choice", tests, tu_group_init, tu_group_shutdown);
  MPI_Finalize();
  return failed;
}
