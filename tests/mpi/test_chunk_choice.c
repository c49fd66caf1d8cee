/* Large allreduces are reduced in chunks whose size rank 0 chooses by measurement
 * (tune/chunk_chooser.h): its choice travels in each negotiation round, so every rank
 * cuts the same call the same way even while the size changes. The alternative size
 * is tried from the fourth measured call on, so these steps run with both sizes:
 * buffers above the larger chunk (odd element counts, so the last chunk is short), in
 * place and out of place, summed and averaged, in the world and in a process set that
 * leaves rank 0 (the one that chooses) out. Every element is checked every step. */
#include "test_util.h"

enum { kSteps = 16 };
/* 16 MiB of floats and a few more: above both sizes (1 and 16 MiB with MPICH, 16 and
 * 1 MiB with Open MPI). */
static const int64_t kCount = (16 << 20) / 4 + 1001;

static double input(int rank, int step, int64_t i) { return (double)((i + step) % 7 + rank); }

static void reduce_steps(int32_t set, int members, int member_rank, const char* prefix) {
  float* send = tu_alloc((size_t)kCount * sizeof(float));
  float* recv = tu_alloc((size_t)kCount * sizeof(float));
  for (int step = 0; step < kSteps; ++step) {
    const int in_place = step % 2 == 0;
    const hvd_reduce_op_t op = step % 4 < 2 ? HVD_OP_SUM : HVD_OP_AVERAGE;
    float* out = in_place ? send : recv;
    for (int64_t i = 0; i < kCount; ++i) send[i] = (float)input(member_rank, step, i);
    hvd_op_options_t opts = HVD_OP_OPTIONS_INITIALIZER;
    opts.process_set_id = set;
    char name[64];
    snprintf(name, sizeof name, "%s.%s", prefix, in_place ? "in" : "out");
    hvd_handle_t h;
    assert_int_equal(hvd_allreduce_async(send, out, kCount, HVD_FLOAT32, op, name, &opts, &h),
                     HVD_SUCCESS);
    assert_int_equal(hvd_wait(h), HVD_SUCCESS);
    for (int64_t i = 0; i < kCount; ++i) {
      double want = 0;
      for (int q = 0; q < members; ++q) want += input(q, step, i);
      if (op == HVD_OP_AVERAGE) want /= members;
      if (!tu_close(out[i], want, HVD_FLOAT32)) {
        fail_msg("%s step %d: element %lld is %g, want %g", name, step, (long long)i,
                 (double)out[i], want);
      }
    }
  }
  free(send);
  free(recv);
}

static void world_steps_agree_on_every_chunk(void** state) {
  (void)state;
  reduce_steps(HVD_GLOBAL_PROCESS_SET, hvd_size(), hvd_rank(), "chunked.world");
}

static void a_set_without_the_chooser_agrees_too(void** state) {
  (void)state;
  const int size = hvd_size();
  if (size < 3) skip();  /* a set of one rank makes no MPI calls */
  int ranks[8];
  for (int r = 1; r < size && r <= 8; ++r) ranks[r - 1] = r;
  int32_t set = -1;
  assert_int_equal(hvd_add_process_set(ranks, size - 1, &set), HVD_SUCCESS);
  if (hvd_rank() != 0) reduce_steps(set, size - 1, hvd_rank() - 1, "chunked.set");
  /* Rank 0 keeps negotiating (its rounds carry the choice) while the set reduces. */
  assert_int_equal(hvd_barrier(HVD_GLOBAL_PROCESS_SET), HVD_SUCCESS);
  assert_int_equal(hvd_remove_process_set(set), HVD_SUCCESS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(world_steps_agree_on_every_chunk),
      cmocka_unit_test(a_set_without_the_chooser_agrees_too),
  };
  return cmocka_run_group_tests_name("chunk_choice", tests, tu_group_init, tu_group_shutdown);
}
