/* A tensor of more than 2^31 elements (MPI counts are int: the library chunks). */
#include "test_util.h"

static void more_than_two_to_the_31_elements(void** state) {
  (void)state;
  const int64_t count = (1LL << 31) + 3;
  int8_t* v = malloc((size_t)count);
  if (!v) skip();
  memset(v, 1, (size_t)count);
  v[count - 1] = 2;
  assert_hvd_ok(hvd_allreduce(v, v, count, HVD_INT8, HVD_OP_SUM, "huge"));
  const int size = hvd_size();
  assert_int_equal(v[0], size);
  assert_int_equal(v[(1LL << 31) - 1], size);
  assert_int_equal(v[1LL << 31], size);
  assert_int_equal(v[count - 1], 2 * size);
  free(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(more_than_two_to_the_31_elements)};
  return cmocka_run_group_tests_name("large_count", tests, tu_group_init, tu_group_shutdown);
}
