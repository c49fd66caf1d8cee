/* Process sets: static sets given at init, dynamic add/remove, queries, operations on
 * a set, operations from non-members, removal of a set with the id never reused. */
#include "test_util.h"

static int group_init_with_static_sets(void** state) {
  (void)state;
  /* Set 1: even ranks; set 2: rank 0 alone. */
  int evens[64], n = 0, size = 0;
  /* hvd_size is unknown before init: the launcher's variable tells it. */
  size = tu_launcher_size();
  for (int r = 0; r < size; r += 2) evens[n++] = r;
  int zero[1] = {0};
  const int* sets[2] = {evens, zero};
  int sizes[2] = {n, 1};
  return hvd_init_with_process_sets(2, sets, sizes) == HVD_SUCCESS ? 0 : -1;
}

static void static_sets_queries_and_allreduce(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  int32_t ids[8];
  int count = 0;
  assert_hvd_ok(hvd_process_set_ids(ids, 8, &count));
  assert_int_equal(count, 3);
  assert_int_equal(hvd_process_set_size(1), (size + 1) / 2);
  assert_int_equal(hvd_process_set_included(1), rank % 2 == 0);
  assert_int_equal(hvd_process_set_rank(1), rank % 2 == 0 ? rank / 2 : -1);
  assert_int_equal(hvd_process_set_size(2), 1);
  assert_int_equal(hvd_process_set_size(99), -1);

  hvd_op_options_t opts;
  hvd_op_options_init(&opts);
  opts.process_set_id = 1;
  int32_t v = rank + 1;
  hvd_handle_t h;
  if (rank % 2 == 0) {
    assert_hvd_ok(hvd_allreduce_async(&v, &v, 1, HVD_INT32, HVD_OP_SUM, "evens", &opts, &h));
    assert_hvd_ok(hvd_wait(h));
    int32_t want = 0;
    for (int r = 0; r < size; r += 2) want += r + 1;
    assert_int_equal(v, want);
  } else {
    assert_hvd_status(hvd_allreduce_async(&v, &v, 1, HVD_INT32, HVD_OP_SUM, "evens", &opts, &h),
                      HVD_ERR_INVALID_ARGUMENT);
  }
  /* The global set keeps working beside it. */
  int32_t all = 1;
  assert_hvd_ok(hvd_allreduce(&all, &all, 1, HVD_INT32, HVD_OP_SUM, "all"));
  assert_int_equal(all, size);
}

static void dynamic_add_use_remove(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size == 1) {
    /* Alone, every possible set exists already (the global one). */
    int zero[1] = {0};
    int32_t id;
    assert_hvd_status(hvd_add_process_set(zero, 1, &id), HVD_ERR_INVALID_ARGUMENT);
    return;
  }
  for (int round = 0; round < 3; ++round) {
    /* The last two ranks, listed unsorted (only the last one with 2 ranks, so the set
       differs from the global one). */
    int members[2] = {size - 1, size - 2};
    int n = size > 2 ? 2 : 1;
    int32_t id = -1;
    assert_hvd_ok(hvd_add_process_set(members, n, &id));
    assert_true(id >= 3);
    assert_int_equal(hvd_process_set_size(id), n);
    int ranks[2];
    int nranks = 0;
    assert_hvd_ok(hvd_process_set_ranks(id, ranks, 2, &nranks));
    assert_int_equal(nranks, n);
    assert_true(ranks[0] < ranks[n - 1] || n == 1);
    /* The same ranks again: refused on every rank. */
    int32_t dup = -1;
    assert_hvd_status(hvd_add_process_set(members, n, &dup), HVD_ERR_INVALID_ARGUMENT);
    if (hvd_process_set_included(id) == 1) {
      hvd_op_options_t opts;
      hvd_op_options_init(&opts);
      opts.process_set_id = id;
      int64_t shape[1] = {1};
      int64_t mine = rank;
      void* out = NULL;
      int64_t dim0;
      assert_hvd_ok(hvd_allgather(&mine, 1, shape, HVD_INT64, &out, &dim0, NULL, "members", &opts));
      assert_int_equal(dim0, n);
      assert_int_equal(((int64_t*)out)[n - 1], size - 1);
      hvd_free(out);
      assert_hvd_ok(hvd_barrier(id));
    }
    assert_hvd_ok(hvd_remove_process_set(id));
    assert_int_equal(hvd_process_set_size(id), -1);
    assert_hvd_status(hvd_remove_process_set(id), HVD_ERR_INVALID_ARGUMENT);
  }
  assert_hvd_status(hvd_remove_process_set(0), HVD_ERR_INVALID_ARGUMENT);
}

/* Even and odd ranks run different operations on their own sets at the same time. */
static void even_and_odd_sets_at_once(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) skip();
  int evens[32], odds[32], ne = 0, no = 0;
  for (int r = 0; r < size; ++r) {
    if (r % 2) odds[no++] = r;
    else evens[ne++] = r;
  }
  int32_t even_id = -1, odd_id = -1;
  int32_t existing = 1; /* the static set 1 already holds the even ranks */
  (void)evens;
  even_id = existing;
  assert_hvd_ok(hvd_add_process_set(odds, no, &odd_id));
  hvd_op_options_t opts;
  hvd_op_options_init(&opts);
  for (int step = 0; step < 5; ++step) {
    if (rank % 2 == 0) {
      opts.process_set_id = even_id;
      int64_t v = rank;
      hvd_handle_t h;
      assert_hvd_ok(hvd_allreduce_async(&v, &v, 1, HVD_INT64, HVD_OP_MAX, "set.op", &opts, &h));
      assert_hvd_ok(hvd_wait(h));
      assert_int_equal(v, 2 * (ne - 1));
    } else {
      opts.process_set_id = odd_id;
      int64_t shape[1] = {1};
      int64_t mine = rank;
      void* out = NULL;
      int64_t dim0;
      assert_hvd_ok(hvd_allgather(&mine, 1, shape, HVD_INT64, &out, &dim0, NULL, "set.op", &opts));
      assert_int_equal(dim0, no);
      for (int i = 0; i < no; ++i) assert_int_equal(((int64_t*)out)[i], odds[i]);
      hvd_free(out);
    }
  }
  assert_hvd_ok(hvd_remove_process_set(odd_id));
}

/* Unnamed operations on a set the others are not in leave the automatic names of the
 * global set in step: names count per process set. */
static void automatic_names_count_per_set(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) skip();
  hvd_op_options_t opts;
  hvd_op_options_init(&opts);
  opts.process_set_id = 1; /* the static set of even ranks */
  if (rank % 2 == 0) {
    for (int i = 0; i < 3; ++i) {
      int64_t v = 1;
      hvd_handle_t h;
      assert_hvd_ok(hvd_allreduce_async(&v, &v, 1, HVD_INT64, HVD_OP_SUM, NULL, &opts, &h));
      assert_hvd_ok(hvd_wait(h));
      assert_int_equal(v, (size + 1) / 2);
    }
  }
  int64_t all = 1;
  assert_hvd_ok(hvd_allreduce(&all, &all, 1, HVD_INT64, HVD_OP_SUM, NULL));
  assert_int_equal(all, size);
}

static void bad_add_arguments(void** state) {
  (void)state;
  const int size = hvd_size();
  int32_t id;
  int out_of_range[1] = {size};
  assert_hvd_status(hvd_add_process_set(out_of_range, 1, &id), HVD_ERR_INVALID_ARGUMENT);
  int twice[2] = {0, 0};
  assert_hvd_status(hvd_add_process_set(twice, 2, &id), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_add_process_set(NULL, 1, &id), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_add_process_set(twice, 1, NULL), HVD_ERR_INVALID_ARGUMENT);
}

static void ranks_that_disagree_get_mismatch(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) skip();
  int members[1] = {rank == 0 ? 0 : 1};
  int32_t id = -1;
  assert_hvd_status(hvd_add_process_set(members, 1, &id), HVD_ERR_MISMATCH);
}

/* root_rank is a global rank inside a set too (Horovod's meaning): in the set of world
 * ranks 1..size-1, root 1 is world rank 1 (the set's first member), and the data every
 * member receives is that rank's. A root outside the set is refused, naming it and the
 * set's ranks. */
static void broadcast_root_is_a_global_rank(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) skip();
  int members[32], n = 0;
  for (int r = 1; r < size; ++r) members[n++] = r;
  int32_t id = -1;
  assert_hvd_ok(hvd_add_process_set(members, n, &id));
  if (rank != 0) {
    hvd_op_options_t opts;
    hvd_op_options_init(&opts);
    opts.process_set_id = id;
    for (int root = 1; root < size; ++root) {
      int32_t v[3] = {rank * 10, rank * 10 + 1, rank * 10 + 2};
      char name[32];
      snprintf(name, sizeof name, "set.bcast.%d", root);
      hvd_handle_t h;
      assert_hvd_ok(hvd_broadcast_async(v, 3, HVD_INT32, root, name, &opts, &h));
      assert_hvd_ok(hvd_wait(h));
      for (int i = 0; i < 3; ++i) assert_int_equal(v[i], root * 10 + i);
    }
    int32_t v = 7;
    hvd_handle_t h;
    assert_hvd_status(hvd_broadcast_async(&v, 1, HVD_INT32, 0, "set.bcast.outside", &opts, &h),
                      HVD_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(hvd_last_error(), "root_rank 0"));
    char ranks[64];
    if (size == 2) snprintf(ranks, sizeof ranks, "[1]");
    else if (size == 3) snprintf(ranks, sizeof ranks, "[1, 2]");
    else snprintf(ranks, sizeof ranks, "[1..%d]", size - 1);
    assert_non_null(strstr(hvd_last_error(), ranks));
    assert_int_equal(v, 7);
  }
  /* The static set of even ranks: its last member is the root, by its world rank. */
  if (rank % 2 == 0) {
    const int last_even = (size - 1) / 2 * 2;
    hvd_op_options_t opts;
    hvd_op_options_init(&opts);
    opts.process_set_id = 1;
    int64_t v = rank + 100;
    hvd_handle_t h;
    assert_hvd_ok(hvd_broadcast_async(&v, 1, HVD_INT64, last_even, "evens.bcast", &opts, &h));
    assert_hvd_ok(hvd_wait(h));
    assert_int_equal(v, last_even + 100);
  }
  assert_hvd_ok(hvd_remove_process_set(id));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(static_sets_queries_and_allreduce),
      cmocka_unit_test(dynamic_add_use_remove),
      cmocka_unit_test(bad_add_arguments),
      cmocka_unit_test(even_and_odd_sets_at_once),
      cmocka_unit_test(ranks_that_disagree_get_mismatch),
      cmocka_unit_test(broadcast_root_is_a_global_rank),
      cmocka_unit_test(automatic_names_count_per_set),
  };
  return cmocka_run_group_tests_name("process_sets", tests, group_init_with_static_sets,
                                     tu_group_shutdown);
}
