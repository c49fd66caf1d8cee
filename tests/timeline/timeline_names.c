/* A job whose timeline (rank 0's) must speak Horovod's words: rows named
 * "<op>.<tensor name>", automatic names not prefixed twice, process-set rows named in
 * words, each fused tensor with its own bytes, and the activities Horovod shows.
 * job_timeline.sh runs it under mpiexec -n 2 and checks the file against
 * timeline_names.expect. */
#include "hvd_check.h"

int main(void) {
  CHECK(hvd_init());
  const int rank = hvd_rank(), size = hvd_size();

  float v[3] = {1, 2, 3};
  CHECK(hvd_allreduce(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, "test_allreduce"));

  /* A group is fused as one unit: 16 and 400 bytes in one batch. */
  static float small[4], big[100];
  const void* sends[2] = {small, big};
  void* recvs[2] = {small, big};
  const int64_t counts[2] = {4, 100};
  CHECK(hvd_grouped_allreduce(2, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM, "grp", NULL));

  CHECK(hvd_allreduce(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, NULL)); /* allreduce.noname.0 */

  /* The end of each op carries its output's dtype and shape, as Horovod's does. */
  float m[6] = {0};
  const int64_t shape[2] = {2, 3};
  hvd_op_options_t shaped;
  CHECK(hvd_op_options_init(&shaped));
  shaped.shape = shape;
  shaped.ndim = 2;
  hvd_handle_t h;
  CHECK(hvd_allreduce_async(m, m, 6, HVD_FLOAT32, HVD_OP_SUM, "shaped", &shaped, &h));
  CHECK(hvd_wait(h));
  int32_t rows[8] = {0}; /* rank r gives r + 1 rows of 2 */
  const int64_t mine[2] = {rank + 1, 2};
  void* gathered = NULL;
  int64_t dim0 = 0;
  CHECK(hvd_allgather(rows, 2, mine, HVD_INT32, &gathered, &dim0, NULL, "rows", NULL));
  hvd_free(gathered);
  CHECK(hvd_broadcast(v, 3, HVD_FLOAT32, size - 1, "weights"));

  int members[1] = {0};
  int32_t id = -1;
  CHECK(hvd_add_process_set(members, 1, &id));
  if (rank == 0) {
    hvd_op_options_t opts;
    CHECK(hvd_op_options_init(&opts));
    opts.process_set_id = id;
    hvd_handle_t h;
    CHECK(hvd_allreduce_async(v, v, 3, HVD_FLOAT32, HVD_OP_SUM, "solo.sum", &opts, &h));
    CHECK(hvd_wait(h));
  }
  CHECK(hvd_barrier(0));
  CHECK(hvd_shutdown());
  printf("rank %d done (process set %d)\n", rank, id);
  return 0;
}
