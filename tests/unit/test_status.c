/* Status strings, versions and option defaults through the public ABI, without MPI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include <hvd/hvd.h>
#include <hvd/hvd_version.h>

static void every_status_has_a_sentence(void** state) {
  (void)state;
#define CHECK_STATUS(name, value, text)                       \
  assert_int_equal((int)name, value);                         \
  assert_string_equal(hvd_status_string(name), text);
  HVD_STATUS_MAP(CHECK_STATUS)
#undef CHECK_STATUS
  assert_string_equal(hvd_status_string((hvd_status_t)-1), "unknown status");
  assert_string_equal(hvd_status_string((hvd_status_t)13), "unknown status");
}

static void pinned_values(void** state) {
  (void)state;
  assert_int_equal(HVD_SUCCESS, 0);
  assert_int_equal(HVD_ERR_INTERNAL, 12);
  assert_int_equal(HVD_OP_AVERAGE, 0);
  assert_int_equal(HVD_OP_ADASUM, 2);
  assert_int_equal(HVD_OP_PRODUCT, 5);
  assert_int_equal(HVD_BOOL, 10);
}

static void version_matches_header(void** state) {
  (void)state;
  assert_int_equal(hvd_version(), HVD_VERSION_NUMBER);
  assert_string_equal(hvd_version_string(), HVD_VERSION_STRING);
}

static void option_defaults(void** state) {
  (void)state;
  hvd_op_options_t a, b = HVD_OP_OPTIONS_INITIALIZER;
  memset(&a, 0x5a, sizeof a);
  assert_int_equal(hvd_op_options_init(&a), HVD_SUCCESS);
  assert_int_equal(a.struct_size, sizeof(hvd_op_options_t));
  assert_true(a.prescale_factor == 1.0 && a.postscale_factor == 1.0);
  assert_int_equal(a.device, HVD_DEVICE_CPU);
  assert_int_equal(a.process_set_id, 0);
  assert_null(a.stream);
  assert_memory_equal(&a, &b, offsetof(hvd_op_options_t, reserved));
  assert_int_equal(hvd_op_options_init(NULL), HVD_ERR_INVALID_ARGUMENT);
  assert_true(strlen(hvd_last_error()) > 0);
}

static void reducescatter_rows(void** state) {
  (void)state;
  assert_int_equal(hvd_reducescatter_rows(10, 0, 4), 3);
  assert_int_equal(hvd_reducescatter_rows(10, 1, 4), 3);
  assert_int_equal(hvd_reducescatter_rows(10, 2, 4), 2);
  assert_int_equal(hvd_reducescatter_rows(10, 4, 4), -1);
  assert_int_equal(hvd_reducescatter_rows(-1, 0, 4), -1);
}

static void params_before_init(void** state) {
  (void)state;
  char buf[64];
  assert_int_equal(hvd_param_get("HOROVOD_CACHE_CAPACITY", buf, sizeof buf), HVD_SUCCESS);
  assert_string_equal(buf, "1024");
  assert_int_equal(hvd_param_get("HOROVOD_NOPE", buf, sizeof buf), HVD_ERR_INVALID_ARGUMENT);
  assert_int_equal(hvd_param_get(NULL, buf, sizeof buf), HVD_ERR_INVALID_ARGUMENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_status_has_a_sentence), cmocka_unit_test(pinned_values),
      cmocka_unit_test(version_matches_header),      cmocka_unit_test(option_defaults),
      cmocka_unit_test(reducescatter_rows),          cmocka_unit_test(params_before_init),
  };
  return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
