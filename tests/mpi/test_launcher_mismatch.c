/* A process started by a launcher as one of 2 ranks whose MPI library sees a job of
 * one: libhvd was built against another MPI than the launcher's. Run as a singleton
 * with the other MPI's launcher variable set (meson.build); init must refuse with a
 * message that says so, not let each rank reduce its own data alone. */
#include "test_util.h"

static void init_refuses_a_job_of_one_launched_as_two(void** state) {
  (void)state;
  hvd_status_t s = hvd_init();
  if (s != HVD_ERR_MPI || !strstr(hvd_last_error(), "started as one of 2 ranks") ||
      !strstr(hvd_last_error(), "another MPI"))
    fail_msg("hvd_init returned %d: %s", s, hvd_last_error());
  assert_int_equal(hvd_is_initialized(), 0);
  assert_int_equal(hvd_size(), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(init_refuses_a_job_of_one_launched_as_two),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
