/* Horovod's C entry points (what horovod.common.basics.HorovodBasics calls through
 * ctypes), declared as the ints libhvd returns them. */
#include "test_util.h"

int horovod_init(const int* ranks, int nranks, const int* process_set_ranks,
                  const int* process_set_sizes, int num_process_sets);
void horovod_shutdown(void);
int horovod_is_initialized(void);
int horovod_rank(void);
int horovod_size(void);
int horovod_local_rank(void);
int horovod_local_size(void);
int horovod_cross_rank(void);
int horovod_cross_size(void);
int horovod_mpi_built(void);
int horovod_gloo_built(void);
int horovod_reduce_op_average(void);
int horovod_reduce_op_sum(void);
int horovod_reduce_op_adasum(void);
int horovod_add_process_set(const int* ranks, int nranks);
int horovod_remove_process_set(int id);
int horovod_process_set_rank(int id);
int horovod_process_set_size(int id);
int horovod_process_set_included(int id);
int horovod_number_of_process_sets(void);
void horovod_process_set_ids(int* ids);
int horovod_process_set_ranks(int id, int* ranks);
extern const int HOROVOD_PROCESS_SET_ERROR_INIT;
extern const int HOROVOD_PROCESS_SET_ERROR_UNKNOWN_SET;
extern const int HOROVOD_PROCESS_SET_ERROR_FOREIGN_SET;

static void basics_lifecycle_and_process_sets(void** state) {
  (void)state;
  assert_int_equal(horovod_rank(), -1);
  assert_int_equal(horovod_process_set_size(0), HOROVOD_PROCESS_SET_ERROR_INIT);
  /* Static process set {0} through Horovod's flat arrays. */
  int flat[1] = {0}, sizes[1] = {1};
  assert_true(horovod_init(NULL, 0, flat, sizes, 1));
  assert_true(horovod_is_initialized());
  const int rank = horovod_rank(), size = horovod_size();
  assert_int_equal(rank, hvd_rank());
  assert_int_equal(size, hvd_size());
  assert_int_equal(horovod_local_size() * horovod_cross_size() >= size, 1);
  assert_true(horovod_mpi_built());
  assert_false(horovod_gloo_built());
  assert_int_equal(horovod_reduce_op_average(), HVD_OP_AVERAGE);
  assert_int_equal(horovod_reduce_op_sum(), HVD_OP_SUM);
  assert_int_equal(horovod_reduce_op_adasum(), HVD_OP_ADASUM);
  assert_int_equal(horovod_number_of_process_sets(), 2);
  int ids[4] = {-9, -9, -9, -9};
  horovod_process_set_ids(ids);
  assert_int_equal(ids[0], 0);
  assert_int_equal(ids[1], 1);
  assert_int_equal(horovod_process_set_size(1), 1);
  assert_int_equal(horovod_process_set_rank(1), rank == 0 ? 0 : HOROVOD_PROCESS_SET_ERROR_FOREIGN_SET);
  assert_int_equal(horovod_process_set_size(42), HOROVOD_PROCESS_SET_ERROR_UNKNOWN_SET);
  if (size > 1) {
    int last[1] = {size - 1};
    int id = horovod_add_process_set(last, 1);
    assert_true(id >= 2);
    int members[1] = {-1};
    assert_int_equal(horovod_process_set_ranks(id, members), 0);
    assert_int_equal(members[0], size - 1);
    assert_int_equal(horovod_process_set_included(id), rank == size - 1);
    assert_int_equal(horovod_remove_process_set(id), id);
  }
  horovod_shutdown();
  assert_false(horovod_is_initialized());
  assert_int_equal(horovod_size(), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(basics_lifecycle_and_process_sets)};
  return cmocka_run_group_tests_name("horovod_compat", tests, NULL, NULL);
}
