/* The stall inspector: a tensor that some ranks never submit ends, after
 * HOROVOD_STALL_SHUTDOWN_TIME_SECONDS, with HVD_ERR_TIMEOUT on the ranks that wait for
 * it, naming the ranks that are missing; the job goes on afterwards. Run with
 * HOROVOD_STALL_CHECK_TIME_SECONDS=1 and HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=2. */
#include <mpi.h>

#include "test_util.h"

static void unmatched_tensor_times_out(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) skip();
  /* The last rank submits a tensor nobody else does; work that all submit goes on
     beside it. */
  float lonely = 1;
  hvd_handle_t h;
  if (rank == size - 1)
    assert_hvd_ok(hvd_allreduce_async(&lonely, &lonely, 1, HVD_FLOAT32, HVD_OP_SUM, "lonely", NULL, &h));
  int32_t x = 1;
  assert_hvd_ok(hvd_allreduce(&x, &x, 1, HVD_INT32, HVD_OP_SUM, "beside"));
  assert_int_equal(x, size);
  if (rank == size - 1) {
    assert_hvd_status(hvd_wait(h), HVD_ERR_TIMEOUT);
    assert_non_null(strstr(hvd_last_error(), "lonely"));
    assert_non_null(strstr(hvd_last_error(), "never submitted"));
  }
  /* Wait for the last rank outside libhvd (any collective of ours started now would
     stall as long as its wait does), then check that the runtime goes on. */
  MPI_Barrier(MPI_COMM_WORLD);
  /* The name is free again and, submitted by all, works. */
  float v = 2;
  assert_hvd_ok(hvd_allreduce(&v, &v, 1, HVD_FLOAT32, HVD_OP_SUM, "lonely"));
  assert_true(v == 2.0f * size);
}

int main(int argc, char** argv) {
  /* Thread-multiple, so this thread may call MPI beside libhvd's background thread. */
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const struct CMUnitTest tests[] = {cmocka_unit_test(unmatched_tensor_times_out)};
  int failed = provided < MPI_THREAD_MULTIPLE
                   ? 77
                   : cmocka_run_group_tests_name("stall", tests, tu_group_init, tu_group_shutdown);
  MPI_Finalize();
  return failed;
}
