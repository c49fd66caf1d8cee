/* The application calls MPI itself while libhvd runs, on MPI that libhvd initialized:
 * libhvd asks for MPI_THREAD_MULTIPLE, so the application's collectives on its own
 * communicator may run while libhvd's background thread runs operations. */
#include "test_util.h"

#include <mpi.h>

/* Exported for Horovod's ctypes bindings; declared here as they declare it. */
int horovod_mpi_threads_supported(void);

static void libhvd_asks_for_thread_multiple(void** state) {
  (void)state;
  int provided = -1;
  MPI_Query_thread(&provided);
  /* MPICH and Open MPI builds provide it; a build that cannot would be reported. */
  assert_int_equal(provided, MPI_THREAD_MULTIPLE);
  assert_int_equal(horovod_mpi_threads_supported(), 1);
}

static void application_mpi_beside_libhvd(void** state) {
  (void)state;
  enum { kTensors = 64, kRounds = 20 };
  MPI_Comm mine;
  assert_int_equal(MPI_Comm_dup(MPI_COMM_WORLD, &mine), MPI_SUCCESS);
  const int size = hvd_size();
  float values[kTensors];
  hvd_handle_t handles[kTensors];
  char name[32];
  for (int round = 0; round < kRounds; ++round) {
    for (int t = 0; t < kTensors; ++t) {
      values[t] = (float)(t + round);
      snprintf(name, sizeof name, "app_mpi.%d", t);
      assert_hvd_ok(hvd_allreduce_async(&values[t], &values[t], 1, HVD_FLOAT32, HVD_OP_SUM,
                                        name, NULL, &handles[t]));
    }
    /* The application's own traffic while libhvd's operations are in flight. */
    int one = 1, sum = 0;
    assert_int_equal(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, mine), MPI_SUCCESS);
    assert_int_equal(sum, size);
    for (int t = 0; t < kTensors; ++t) {
      assert_hvd_ok(hvd_wait(handles[t]));
      assert_float_equal(values[t], (float)((t + round) * size), 0);
    }
  }
  MPI_Comm_free(&mine);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(libhvd_asks_for_thread_multiple),
      cmocka_unit_test(application_mpi_beside_libhvd),
  };
  return cmocka_run_group_tests_name("app_mpi", tests, tu_group_init, tu_group_shutdown);
}
