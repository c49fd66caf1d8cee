/* Join and barrier: uneven numbers of steps per rank, joined ranks contributing zeros
 * to allreduce (AVERAGE still divides by the full size), other operations failing
 * while a rank is joined, the last joined rank agreed everywhere. */
#include "test_util.h"

static void uneven_steps_then_join(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  /* Rank r runs r + 2 steps of a named allreduce, then joins; twice, so join resets. */
  for (int round = 0; round < 2; ++round) {
    const int steps = rank + 2;
    for (int step = 0; step < steps; ++step) {
      float v[4] = {1, 1, 1, 1};
      assert_hvd_ok(hvd_allreduce(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, "grad.sum"));
      int active = 0; /* ranks that still run this step; joined ranks add zeros */
      for (int q = 0; q < size; ++q) active += q + 2 > step;
      if (v[0] != (float)active || v[3] != (float)active)
        fail_msg("round %d step %d: sum %g, %d active", round, step, v[0], active);
    }
    int last = -2;
    assert_hvd_ok(hvd_join(HVD_DEVICE_CPU, &last));
    /* The rank with the most steps can only finish after every other rank joined. */
    assert_int_equal(last, size - 1);
  }
}

static void average_divides_by_full_size(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (rank != 0) {
    double v = 3.0;
    assert_hvd_ok(hvd_allreduce(&v, &v, 1, HVD_FLOAT64, HVD_OP_AVERAGE, "avg.joined"));
    if (fabs(v - 3.0 * (size - 1) / size) > 1e-12) fail_msg("average %g", v);
  }
  int last = -1;
  assert_hvd_ok(hvd_join(HVD_DEVICE_CPU, &last));
  /* Rank 0 joined first: the others' average needed its zeros. */
  if (size == 1) assert_int_equal(last, 0);
  else assert_true(last > 0 && last < size);
}

static void other_ops_fail_while_joined(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) skip();
  if (rank != 0) {
    float v[2] = {1, 2};
    assert_hvd_status(hvd_broadcast(v, 2, HVD_FLOAT32, 1, "bcast.while.joined"), HVD_ERR_MISMATCH);
    assert_non_null(strstr(hvd_last_error(), "joined"));
    int64_t shape[1] = {1};
    void* out = NULL;
    int64_t dim0;
    assert_hvd_status(hvd_allgather(v, 1, shape, HVD_FLOAT32, &out, &dim0, NULL, "gather.while.joined", NULL),
                      HVD_ERR_MISMATCH);
  }
  int last = -1;
  assert_hvd_ok(hvd_join(HVD_DEVICE_CPU, &last));
  assert_true(last > 0 || size == 1);
}

/* Ranks that differ in what they tried while another rank was joined name their
 * unnamed operations differently afterwards (they count per process): an allgather
 * under such names can never match across ranks, and must fail at once while a rank
 * is joined instead of waiting for a match. Rank r makes r extra unnamed broadcasts
 * (refused: rank 0 has joined), so from then on every rank's automatic names differ. */
static void unnamed_ops_fail_while_joined_whatever_their_names(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 3) skip();
  if (rank != 0) {
    for (int i = 0; i < rank; ++i) {
      float b = 1;
      assert_hvd_status(hvd_broadcast(&b, 1, HVD_FLOAT32, 1, NULL), HVD_ERR_MISMATCH);
    }
    float v[1] = {1};
    int64_t shape[1] = {1};
    void* out = NULL;
    int64_t dim0;
    assert_hvd_status(hvd_allgather(v, 1, shape, HVD_FLOAT32, &out, &dim0, NULL, NULL, NULL),
                      HVD_ERR_MISMATCH);
    assert_non_null(strstr(hvd_last_error(), "joined"));
  }
  int last = -1;
  assert_hvd_ok(hvd_join(HVD_DEVICE_CPU, &last));
  assert_true(last > 0);
}

/* Each rank in turn joins first while the others run one more allreduce. */
static void each_rank_joins_first_in_turn(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  for (int first = 0; first < size; ++first) {
    if (rank != first) {
      int32_t v = 1;
      assert_hvd_ok(hvd_allreduce(&v, &v, 1, HVD_INT32, HVD_OP_SUM, "turn"));
      assert_int_equal(v, size - 1);
    }
    int last = -1;
    assert_hvd_ok(hvd_join(HVD_DEVICE_CPU, &last));
    assert_true(size == 1 ? last == 0 : last != first);
  }
}

/* When the last rank joins, nobody has data: no cached allreduce may run, on zeros
 * alone (it once ran every cached allreduce of the job in that round). */
static void all_joined_runs_no_cached_allreduce(void** state) {
  (void)state;
  enum { kTensors = 8 };
  char name[32];
  for (int step = 0; step < 3; ++step) /* cached from the second step */
    for (int t = 0; t < kTensors; ++t) {
      float v = 1;
      snprintf(name, sizeof name, "cached.%d", t);
      assert_hvd_ok(hvd_allreduce(&v, &v, 1, HVD_FLOAT32, HVD_OP_SUM, name));
    }
  hvd_counters_t before = {.struct_size = sizeof before}, after = {.struct_size = sizeof after};
  assert_hvd_ok(hvd_get_counters(&before));
  int last = -1;
  assert_hvd_ok(hvd_join(HVD_DEVICE_CPU, &last));
  assert_hvd_ok(hvd_get_counters(&after));
  assert_int_equal(after.collectives, before.collectives);
}

/* A barrier while other operations are pending on the same ranks. */
static void barrier_with_operations_pending(void** state) {
  (void)state;
  const int size = hvd_size();
  float v[16];
  hvd_handle_t h[16];
  for (int i = 0; i < 16; ++i) {
    v[i] = 1;
    char name[32];
    snprintf(name, sizeof name, "pending.%d", i);
    assert_hvd_ok(hvd_allreduce_async(&v[i], &v[i], 1, HVD_FLOAT32, HVD_OP_SUM, name, NULL, &h[i]));
  }
  assert_hvd_ok(hvd_barrier(0));
  for (int i = 0; i < 16; ++i) {
    assert_hvd_ok(hvd_wait(h[i]));
    assert_true(v[i] == (float)size);
  }
}

static void barrier_repeatedly(void** state) {
  (void)state;
  for (int i = 0; i < 20; ++i) assert_hvd_ok(hvd_barrier(0));
  assert_hvd_status(hvd_barrier(12345), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_join(-7, NULL), HVD_ERR_INVALID_ARGUMENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(uneven_steps_then_join),
      cmocka_unit_test(average_divides_by_full_size),
      cmocka_unit_test(other_ops_fail_while_joined),
      cmocka_unit_test(unnamed_ops_fail_while_joined_whatever_their_names),
      cmocka_unit_test(barrier_repeatedly),
      cmocka_unit_test(each_rank_joins_first_in_turn),
      cmocka_unit_test(all_joined_runs_no_cached_allreduce),
      cmocka_unit_test(barrier_with_operations_pending),
  };
  return cmocka_run_group_tests_name("join", tests, tu_group_init, tu_group_shutdown);
}
