/* Rank, local and cross numbering. Run under the fork launcher with fake host names
 * (nodeA:2,nodeB:2) the job has two "nodes" of two ranks on one machine. Arguments:
 * the expected local size of each node in order, e.g. "2 2" or "3 1". */
#include "test_util.h"

static int g_nodes[16];
static int g_num_nodes;

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

int main(int argc, char** argv) {
  for (int i = 1; i < argc && g_num_nodes < 16; ++i) g_nodes[g_num_nodes++] = atoi(argv[i]);
  if (g_num_nodes == 0) g_nodes[g_num_nodes++] = 0; /* filled below: one node */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(numbering_matches_the_layout),
      cmocka_unit_test(allreduce_across_nodes),
  };
  if (hvd_init() != HVD_SUCCESS) return 1;
  if (g_nodes[0] == 0) g_nodes[0] = hvd_size();
  int failed = cmocka_run_group_tests_name("topology", tests, NULL, NULL);
  hvd_shutdown();
  return failed;
}
