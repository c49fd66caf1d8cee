/* Disagreement between ranks and invalid arguments: every rank gets a clear error,
 * nobody hangs, and the runtime keeps working afterwards. */
#include "test_util.h"

static void assert_last_error_mentions(const char* a, const char* b) {
  const char* text = hvd_last_error();
  if (!strstr(text, a) || (b && !strstr(text, b)))
    fail_msg("last error '%s' should mention '%s'%s%s", text, a, b ? " and " : "", b ? b : "");
}

static void runtime_still_works(void) {
  const int size = hvd_size();
  int32_t v = 1;
  assert_hvd_ok(hvd_allreduce(&v, &v, 1, HVD_INT32, HVD_OP_SUM, NULL));
  assert_int_equal(v, size);
}

/* Rank 0 disagrees with the others on one property of the tensor. */
static void mismatch(const char* name, int64_t count0, hvd_dtype_t dtype0, hvd_reduce_op_t op0,
                     double prescale0, double postscale0, const char* field) {
  const int rank = hvd_rank();
  if (hvd_size() == 1) skip(); /* nobody to disagree with */
  double buf[64] = {0};
  hvd_op_options_t opts;
  assert_hvd_ok(hvd_op_options_init(&opts));
  int64_t count = 16;
  hvd_dtype_t dtype = HVD_FLOAT32;
  hvd_reduce_op_t op = HVD_OP_SUM;
  if (rank == 0) {
    count = count0;
    dtype = dtype0;
    op = op0;
    opts.prescale_factor = prescale0;
    opts.postscale_factor = postscale0;
  }
  hvd_handle_t h;
  assert_hvd_ok(hvd_allreduce_async(buf, buf, count, dtype, op, name, &opts, &h));
  assert_hvd_status(hvd_wait(h), HVD_ERR_MISMATCH);
  assert_last_error_mentions(name, field);
  runtime_still_works();
}

static void mismatched_count(void** s) { (void)s; mismatch("mm.count", 17, HVD_FLOAT32, HVD_OP_SUM, 1, 1, "count"); }
static void mismatched_dtype(void** s) { (void)s; mismatch("mm.dtype", 16, HVD_FLOAT64, HVD_OP_SUM, 1, 1, "dtype"); }
static void mismatched_op(void** s) { (void)s; mismatch("mm.op", 16, HVD_FLOAT32, HVD_OP_MAX, 1, 1, "reduce op"); }
static void mismatched_prescale(void** s) { (void)s; mismatch("mm.pre", 16, HVD_FLOAT32, HVD_OP_SUM, 2, 1, "prescale"); }
static void mismatched_postscale(void** s) { (void)s; mismatch("mm.post", 16, HVD_FLOAT32, HVD_OP_SUM, 1, 0.5, "postscale"); }

static void mismatched_root(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  int32_t v[4] = {0};
  int root = rank == 0 ? size - 1 : 0;
  if (size == 1) return;
  assert_hvd_status(hvd_broadcast(v, 4, HVD_INT32, root, "mm.root"), HVD_ERR_MISMATCH);
  assert_last_error_mentions("mm.root", "root");
  runtime_still_works();
}

static void mismatched_operation(void** state) {
  (void)state;
  const int rank = hvd_rank();
  int32_t v[4] = {0};
  hvd_status_t st = rank == 0 ? hvd_broadcast(v, 4, HVD_INT32, 0, "mm.kind")
                              : hvd_allreduce(v, v, 4, HVD_INT32, HVD_OP_SUM, "mm.kind");
  if (hvd_size() > 1) {
    assert_int_equal(st, HVD_ERR_MISMATCH);
    assert_last_error_mentions("mm.kind", "operation");
  }
  runtime_still_works();
}

/* The first steps populate the response cache; then rank 0 changes the count. */
static void mismatch_after_cached_steps(void** state) {
  (void)state;
  if (hvd_size() == 1) skip();
  float v[32];
  for (int step = 0; step < 3; ++step)
    assert_hvd_ok(hvd_allreduce(v, v, 16, HVD_FLOAT32, HVD_OP_SUM, "mm.cached"));
  int64_t count = hvd_rank() == 0 ? 20 : 16;
  if (hvd_size() > 1) {
    assert_hvd_status(hvd_allreduce(v, v, count, HVD_FLOAT32, HVD_OP_SUM, "mm.cached"),
                      HVD_ERR_MISMATCH);
    assert_last_error_mentions("mm.cached", "count");
  }
  for (int step = 0; step < 2; ++step)
    assert_hvd_ok(hvd_allreduce(v, v, 16, HVD_FLOAT32, HVD_OP_SUM, "mm.cached"));
}

static void invalid_arguments(void** state) {
  (void)state;
  float v[4] = {0};
  hvd_handle_t h;
  int done;
  assert_hvd_status(hvd_allreduce(NULL, v, 4, HVD_FLOAT32, HVD_OP_SUM, "bad"), HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("sendbuf", "NULL");
  assert_hvd_status(hvd_allreduce(v, NULL, 4, HVD_FLOAT32, HVD_OP_SUM, "bad"), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_allreduce(v, v, -1, HVD_FLOAT32, HVD_OP_SUM, "bad"), HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("count", NULL);
  assert_hvd_status(hvd_allreduce(v, v, 4, (hvd_dtype_t)99, HVD_OP_SUM, "bad"), HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("dtype", NULL);
  assert_hvd_status(hvd_allreduce(v, v, 4, (hvd_dtype_t)-3, HVD_OP_SUM, "bad"), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_allreduce(v, v, 4, HVD_FLOAT32, (hvd_reduce_op_t)42, "bad"), HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("reduce op", NULL);
  assert_hvd_status(hvd_allreduce(v, v, 4, HVD_FLOAT32, HVD_OP_ADASUM, "bad"), HVD_ERR_UNSUPPORTED);
  assert_hvd_status(hvd_allreduce(v, v, 4, HVD_BOOL, HVD_OP_AVERAGE, "bad"), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_broadcast(v, 4, HVD_FLOAT32, -1, "bad"), HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("root_rank", NULL);
  assert_hvd_status(hvd_broadcast(v, 4, HVD_FLOAT32, hvd_size(), "bad"), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_broadcast(NULL, 4, HVD_FLOAT32, 0, "bad"), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_allreduce_async(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, "bad", NULL, NULL), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_poll(123456789, &done), HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("unknown handle", NULL);
  assert_hvd_status(hvd_wait(-5), HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_poll(1, NULL), HVD_ERR_INVALID_ARGUMENT);
  hvd_op_options_t opts;
  memset(&opts, 0, sizeof opts);
  assert_hvd_status(hvd_allreduce_async(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, "bad", &opts, &h), HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("struct_size", NULL);
  assert_hvd_ok(hvd_op_options_init(&opts));
  opts.process_set_id = 77;
  assert_hvd_status(hvd_allreduce_async(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, "bad", &opts, &h), HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("process set 77", NULL);
  assert_hvd_ok(hvd_op_options_init(&opts));
  opts.device = -7;
  assert_hvd_status(hvd_allreduce_async(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, "bad", &opts, &h), HVD_ERR_INVALID_ARGUMENT);
  opts.device = HVD_DEVICE_CPU;
  opts.prescale_factor = NAN;
  assert_hvd_status(hvd_allreduce_async(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, "bad", &opts, &h), HVD_ERR_INVALID_ARGUMENT);
  char* long_name = tu_alloc(100000);
  memset(long_name, 'x', 99999);
  long_name[99999] = '\0';
  assert_hvd_status(hvd_allreduce(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, long_name), HVD_ERR_INVALID_ARGUMENT);
  free(long_name);
  /* Nothing of the above reached the other ranks: they are all still in step. */
  runtime_still_works();
}

static void handle_waited_twice(void** state) {
  (void)state;
  float v = 1;
  hvd_handle_t h;
  assert_hvd_ok(hvd_allreduce_async(&v, &v, 1, HVD_FLOAT32, HVD_OP_SUM, "twice", NULL, &h));
  assert_hvd_ok(hvd_wait(h));
  assert_hvd_status(hvd_wait(h), HVD_ERR_INVALID_ARGUMENT);
}

static void duplicate_name_in_flight(void** state) {
  (void)state;
  const int rank = hvd_rank();
  if (hvd_size() == 1) skip(); /* alone, the first call completes at once */
  float a = 1, b = 1;
  hvd_handle_t first, second;
  if (rank == 0) {
    /* The others submit "dup" only after the blocking call below, so it is still in
     * flight here. */
    assert_hvd_ok(hvd_allreduce_async(&a, &a, 1, HVD_FLOAT32, HVD_OP_SUM, "dup", NULL, &first));
    assert_hvd_status(hvd_allreduce_async(&b, &b, 1, HVD_FLOAT32, HVD_OP_SUM, "dup", NULL, &second),
                      HVD_ERR_DUPLICATE_NAME);
    assert_last_error_mentions("dup", "in flight");
  }
  runtime_still_works();
  if (rank != 0)
    assert_hvd_ok(hvd_allreduce_async(&a, &a, 1, HVD_FLOAT32, HVD_OP_SUM, "dup", NULL, &first));
  assert_hvd_ok(hvd_wait(first));
  assert_float_equal(a, hvd_size(), 0);
  /* After completion the name is free again. */
  assert_hvd_ok(hvd_allreduce(&b, &b, 1, HVD_FLOAT32, HVD_OP_SUM, "dup"));
}

static void status_strings(void** state) {
  (void)state;
  for (int s = HVD_SUCCESS; s <= HVD_ERR_INTERNAL; ++s) {
    const char* text = hvd_status_string((hvd_status_t)s);
    assert_non_null(text);
    assert_true(strlen(text) > 5);
  }
  assert_string_equal(hvd_status_string((hvd_status_t)1000), "unknown status");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mismatched_count),     cmocka_unit_test(mismatched_dtype),
      cmocka_unit_test(mismatched_op),        cmocka_unit_test(mismatched_prescale),
      cmocka_unit_test(mismatched_postscale), cmocka_unit_test(mismatched_root),
      cmocka_unit_test(mismatched_operation), cmocka_unit_test(mismatch_after_cached_steps),
      cmocka_unit_test(invalid_arguments),    cmocka_unit_test(handle_waited_twice),
      cmocka_unit_test(duplicate_name_in_flight), cmocka_unit_test(status_strings),
  };
  return cmocka_run_group_tests_name("errors", tests, tu_group_init, tu_group_shutdown);
}
