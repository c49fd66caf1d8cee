/* Rank, local and cross numbering, and where the ranks of one machine run. Run under
 * the fork launcher with fake host names (nodeA:2,nodeB:2) the job has two "nodes" of
 * two ranks on one machine. Arguments: the expected local size of each node in order,
 * e.g. "2 2" or "3 1". */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <unistd.h>

#include "test_util.h"

static int g_nodes[16];
static int g_num_nodes;
static int g_started_free; /* before hvd_init, this process could run on every online CPU */

static void numbering_matches_the_layout(void** state) {
  (void)state;
  const int rank = hvd_rank();
  int first = 0, node = 0;
  while (node < g_num_nodes && rank >= first + g_nodes[node]) first += g_nodes[node++];
  assert_true(node < g_num_nodes);
  assert_int_equal(hvd_local_size(), g_nodes[node]);
  assert_int_equal(hvd_local_rank(), rank - first);
  int cross = 0;
  for (int k = 0; k < g_num_nodes; ++k) cross += g_nodes[k] > hvd_local_rank();
  assert_int_equal(hvd_cross_size(), cross);
  int homogeneous = 1;
  for (int k = 1; k < g_num_nodes; ++k) homogeneous &= g_nodes[k] == g_nodes[0];
  assert_int_equal(hvd_is_homogeneous(), homogeneous);
  /* cross rank = index of this node among nodes that have this local rank */
  int cross_rank = 0;
  for (int k = 0; k < node; ++k) cross_rank += g_nodes[k] > hvd_local_rank();
  assert_int_equal(hvd_cross_rank(), cross_rank);
}

static void allreduce_across_nodes(void** state) {
  (void)state;
  int64_t v[100];
  for (int i = 0; i < 100; ++i) v[i] = hvd_rank() * 100 + i;
  assert_hvd_ok(hvd_allreduce(v, v, 100, HVD_INT64, HVD_OP_SUM, "nodes"));
  const int64_t size = hvd_size();
  for (int i = 0; i < 100; ++i) assert_int_equal(v[i], 100 * size * (size - 1) / 2 + size * i);
}

/* Whether CPU 0 shares its core with another CPU (SMT): cores, not CPUs, are dealt out. */
static int cpus_share_cores(void) {
  FILE* f = fopen("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "r");
  if (!f) return 1; /* unknown: assume so, and check less */
  char text[64] = "";
  const int read = fgets(text, sizeof text, f) != NULL;
  fclose(f);
  return !read || strpbrk(text, ",-") != NULL;
}

/* Ranks that nothing placed, on one machine split into MPI nodes (the fork launcher's
 * made-up hosts, as network namespaces or containers would be): HVD_CPU_BIND=auto deals
 * the machine's cores out among all of them, not each node's among its own. Every rank
 * is bound; where the machine has a core for each rank, no two share one. */
static void ranks_of_one_machine_run_apart(void** state) {
  (void)state;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (!g_started_free || online < 2 || hvd_gpu_device() >= 0 || getenv("HVD_CPU_BIND") ||
      getenv("HOROVOD_THREAD_AFFINITY"))
    skip();
  cpu_set_t mine;
  assert_int_equal(sched_getaffinity(0, sizeof mine, &mine), 0);
  assert_true(CPU_COUNT(&mine) >= 1);
  assert_true(CPU_COUNT(&mine) < online);
  /* Every rank's CPUs, gathered as a sum of zeros and each rank's own row. */
  enum { kWords = 1024 / 64 };
  const int size = hvd_size();
  int64_t* rows = calloc((size_t)size * kWords, sizeof *rows);
  assert_non_null(rows);
  for (int cpu = 0; cpu < 1024; ++cpu)
    if (CPU_ISSET(cpu, &mine)) rows[hvd_rank() * kWords + cpu / 64] |= (int64_t)1 << (cpu % 64);
  assert_hvd_ok(hvd_allreduce(rows, rows, (int64_t)size * kWords, HVD_INT64, HVD_OP_SUM,
                              "topology.cpus"));
  if (online >= size && !cpus_share_cores())
    for (int a = 0; a < size; ++a)
      for (int b = a + 1; b < size; ++b)
        for (int w = 0; w < kWords; ++w)
          if (rows[a * kWords + w] & rows[b * kWords + w])
            fail_msg("ranks %d and %d share a CPU on a machine with %ld CPUs", a, b, online);
  free(rows);
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc && g_num_nodes < 16; ++i) g_nodes[g_num_nodes++] = atoi(argv[i]);
  if (g_num_nodes == 0) g_nodes[g_num_nodes++] = 0; /* filled below: one node */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(numbering_matches_the_layout),
      cmocka_unit_test(allreduce_across_nodes),
      cmocka_unit_test(ranks_of_one_machine_run_apart),
  };
  cpu_set_t start;
  g_started_free = sched_getaffinity(0, sizeof start, &start) == 0 &&
                   CPU_COUNT(&start) >= sysconf(_SC_NPROCESSORS_ONLN);
  if (hvd_init() != HVD_SUCCESS) return 1;
  if (g_nodes[0] == 0) g_nodes[0] = hvd_size();
  int failed = cmocka_run_group_tests_name("topology", tests, NULL, NULL);
  hvd_shutdown();
  return failed;
}
