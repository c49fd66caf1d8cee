/* Disagreement between ranks and invalid arguments: every rank gets a clear error,
 * nobody hangs, and the runtime keeps working afterwards. */
#include "test_util.h"

static void assert_last_error_mentions(const char* a, const char* b) {
  const char* text = hvd_last_error();
  if (!strstr(text, a) || (b && !strstr(text, b)))
    fail_msg("last error '%s' should mention '%s'%s%s", text, a, b ? " and " : "", b ? b : "");
}

/* An enqueue that succeeds and an operation that then fails with want, its message
 * mentioning a (and b). handle is read after the enqueue has filled it. */
static void assert_fails_on_wait(hvd_status_t enqueued, const hvd_handle_t* handle, hvd_status_t want,
                                 const char* a, const char* b) {
  assert_hvd_ok(enqueued);
  assert_hvd_status(hvd_wait(*handle), want);
  assert_last_error_mentions(a, b);
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
  assert_fails_on_wait(hvd_allreduce_async(buf, buf, count, dtype, op, name, &opts, &h), &h,
                       HVD_ERR_MISMATCH, name, field);
  runtime_still_works();
}

static void mismatched_count(void** s) { (void)s; mismatch("mm.count", 17, HVD_FLOAT32, HVD_OP_SUM, 1, 1, "count"); }
static void mismatched_dtype(void** s) { (void)s; mismatch("mm.dtype", 16, HVD_FLOAT64, HVD_OP_SUM, 1, 1, "dtype"); }
static void mismatched_op(void** s) { (void)s; mismatch("mm.op", 16, HVD_FLOAT32, HVD_OP_MAX, 1, 1, "reduce op"); }
static void mismatched_prescale(void** s) { (void)s; mismatch("mm.pre", 16, HVD_FLOAT32, HVD_OP_SUM, 2, 1, "prescale"); }
static void mismatched_postscale(void** s) { (void)s; mismatch("mm.post", 16, HVD_FLOAT32, HVD_OP_SUM, 1, 0.5, "postscale"); }

/* Combinations refused for every rank alike (AVERAGE of HVD_BOOL) are
 * judged in negotiation: a rank that asks for one where the others ask for something
 * valid meets a mismatch on every rank instead of a refusal that leaves the others
 * waiting. */
static void mismatched_bool_average(void** s) { (void)s; mismatch("mm.bool", 16, HVD_BOOL, HVD_OP_AVERAGE, 1, 1, "dtype"); }
static void mismatched_adasum(void** s) { (void)s; mismatch("mm.adasum", 16, HVD_FLOAT32, HVD_OP_ADASUM, 1, 1, "reduce op"); }

/* Agreed but impossible: the same error on every rank, from the wait. */
static void agreed_impossible_reductions(void** state) {
  (void)state;
  uint8_t flags[4] = {1, 0, 1, 0};
  assert_hvd_status(hvd_allreduce(flags, flags, 4, HVD_BOOL, HVD_OP_AVERAGE, "bool.average"),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("bool.average", "HVD_BOOL");
  float v[4] = {0};
  int64_t shape[1] = {4};
  assert_hvd_status(hvd_reducescatter(v, v, 1, shape, HVD_FLOAT32, HVD_OP_ADASUM, "rs.adasum", NULL),
                    HVD_ERR_UNSUPPORTED);
  assert_last_error_mentions("rs.adasum", "ADASUM");
  hvd_op_options_t opts;
  assert_hvd_ok(hvd_op_options_init(&opts));
  opts.prescale_factor = 2;
  hvd_handle_t h;
  assert_fails_on_wait(hvd_allreduce_async(flags, flags, 4, HVD_BOOL, HVD_OP_SUM, "bool.scaled", &opts, &h),
                       &h, HVD_ERR_INVALID_ARGUMENT, "bool.scaled", "prescale");
  runtime_still_works();
}

/* A scalar passed to allgather or reducescatter: refused on every rank when all pass
 * one, a mismatch on the number of dimensions when only some do. */
static void scalar_rows(void** state) {
  (void)state;
  const int rank = hvd_rank();
  float v[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  void* out = NULL;
  int64_t dim0 = 0;
  assert_hvd_status(hvd_allgather(v, 0, NULL, HVD_FLOAT32, &out, &dim0, NULL, "scalar.all", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("scalar.all", "scalar");
  assert_null(out);
  assert_hvd_status(hvd_reducescatter(v, v, 0, NULL, HVD_FLOAT32, HVD_OP_SUM, "scalar.rs", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  if (hvd_size() > 1) {
    assert_hvd_status(hvd_allgather(v, rank == 0 ? 0 : 1, shape, HVD_FLOAT32, &out, &dim0, NULL,
                                    "scalar.some", NULL),
                      HVD_ERR_MISMATCH);
    assert_last_error_mentions("scalar.some", "number of dimensions");
    assert_null(out);
  }
  runtime_still_works();
}

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
  assert_hvd_status(hvd_allreduce(v, v, 4, HVD_FLOAT32, HVD_OP_ADASUM, "bad"),
                    (hvd_size() & (hvd_size() - 1)) ? HVD_ERR_UNSUPPORTED : HVD_SUCCESS);
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

/* Shapes given in the options are compared, as Horovod compares tensor shapes: an
 * allreduce (or broadcast) of (2, 3) on rank 0 and (3, 2) elsewhere has equal counts
 * but is a mismatch on every rank, naming the tensor, "shape" and each rank's shape. */
static void shape_mismatch(int broadcast, const char* name) {
  const int rank = hvd_rank();
  if (hvd_size() == 1) skip();
  float v[6] = {0};
  const int64_t mine[2] = {rank == 0 ? 2 : 3, rank == 0 ? 3 : 2};
  hvd_op_options_t opts;
  assert_hvd_ok(hvd_op_options_init(&opts));
  opts.shape = mine;
  opts.ndim = 2;
  hvd_handle_t h;
  assert_fails_on_wait(broadcast ? hvd_broadcast_async(v, 6, HVD_FLOAT32, 0, name, &opts, &h)
                                 : hvd_allreduce_async(v, v, 6, HVD_FLOAT32, HVD_OP_SUM, name, &opts, &h),
                       &h, HVD_ERR_MISMATCH, name, "shape");
  assert_last_error_mentions("rank 0: [2, 3]", hvd_size() == 2 ? "rank 1: [3, 2]" : "ranks 1, 2");
  /* The same shape everywhere runs, and an unnamed call after it is still in step. */
  const int64_t same[2] = {3, 2};
  opts.shape = same;
  for (int i = 0; i < 6; ++i) v[i] = 1;
  assert_hvd_ok(hvd_allreduce_async(v, v, 6, HVD_FLOAT32, HVD_OP_SUM, name, &opts, &h));
  assert_hvd_ok(hvd_wait(h));
  assert_float_equal(v[5], hvd_size(), 0);
  runtime_still_works();
}

static void mismatched_allreduce_shape(void** s) { (void)s; shape_mismatch(0, "mm.shape.allreduce"); }
static void mismatched_broadcast_shape(void** s) { (void)s; shape_mismatch(1, "mm.shape.broadcast"); }

/* A rank that gives no shape is compared by count only; one that gives a shape of a
 * different number of dimensions than another rank that gives one is a mismatch. */
static void shape_given_on_some_ranks(void** state) {
  (void)state;
  const int rank = hvd_rank();
  if (hvd_size() == 1) skip();
  float v[6] = {1, 1, 1, 1, 1, 1};
  const int64_t shape[2] = {2, 3};
  hvd_op_options_t opts;
  assert_hvd_ok(hvd_op_options_init(&opts));
  if (rank == 0) {
    opts.shape = shape;
    opts.ndim = 2;
  }
  hvd_handle_t h;
  assert_hvd_ok(hvd_allreduce_async(v, v, 6, HVD_FLOAT32, HVD_OP_SUM, "shape.some", &opts, &h));
  assert_hvd_ok(hvd_wait(h));
  assert_float_equal(v[0], hvd_size(), 0);
  const int64_t flat[1] = {6};
  opts.shape = rank == 0 ? shape : flat;
  opts.ndim = rank == 0 ? 2 : 1;
  assert_fails_on_wait(hvd_allreduce_async(v, v, 6, HVD_FLOAT32, HVD_OP_SUM, "shape.ndim", &opts, &h), &h,
                       HVD_ERR_MISMATCH, "shape.ndim", "[6]");
  runtime_still_works();
}

/* Shapes that cannot describe the tensor are refused at once, on the calling rank. */
static void invalid_options_shape(void** state) {
  (void)state;
  float v[6] = {0};
  hvd_handle_t h;
  hvd_op_options_t opts;
  assert_hvd_ok(hvd_op_options_init(&opts));
  assert_null(opts.shape);
  assert_int_equal(opts.ndim, 0);
  const int64_t shape[2] = {2, 3};
  opts.ndim = -1;
  assert_hvd_status(hvd_allreduce_async(v, v, 6, HVD_FLOAT32, HVD_OP_SUM, "bad", &opts, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("ndim", NULL);
  opts.ndim = 2;
  assert_hvd_status(hvd_allreduce_async(v, v, 6, HVD_FLOAT32, HVD_OP_SUM, "bad", &opts, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("shape is NULL", NULL);
  opts.shape = shape;
  assert_hvd_status(hvd_allreduce_async(v, v, 5, HVD_FLOAT32, HVD_OP_SUM, "bad", &opts, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("[2, 3]", "count is 5");
  assert_hvd_status(hvd_broadcast_async(v, 4, HVD_FLOAT32, 0, "bad", &opts, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  const int64_t negative[2] = {-2, -3};
  opts.shape = negative;
  assert_hvd_status(hvd_allreduce_async(v, v, 6, HVD_FLOAT32, HVD_OP_SUM, "bad", &opts, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  opts.shape = shape;
  const void* sends[2] = {v, v};
  void* recvs[2] = {v, v};
  const int64_t counts[2] = {6, 6};
  assert_hvd_status(hvd_grouped_allreduce_async(2, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM, "bad",
                                                &opts, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("group", NULL);
  /* A group of one takes the shape. */
  assert_hvd_ok(hvd_grouped_allreduce(1, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM, "grp.shape", &opts));
  runtime_still_works();
}

/* A group whose outputs overlap (a tensor given twice, overlapping views) is refused:
 * its memory would be reduced twice. Members in any order; side by side is fine. */
static void group_outputs_overlap(void** state) {
  (void)state;
  float a[16];
  for (int i = 0; i < 16; ++i) a[i] = 1.0f;
  const void* sends[3] = {a, a + 8, a + 4};
  void* recvs[3] = {a, a + 8, a + 4};
  const int64_t counts[3] = {8, 8, 8};
  assert_hvd_status(hvd_grouped_allreduce(3, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM,
                                          "grp.overlap", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("tensors 0 and 2", "overlapping memory");
  const void* down_sends[2] = {a + 8, a};
  void* down[2] = {a + 8, a};
  const int64_t down_counts[2] = {8, 9}; /* descending addresses, one element shared */
  assert_hvd_status(hvd_grouped_allreduce(2, down_sends, down, down_counts, HVD_FLOAT32,
                                          HVD_OP_SUM, "grp.overlap", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("tensors 0 and 1", NULL);
  for (int i = 0; i < 16; ++i) assert_true(a[i] == 1.0f); /* nothing was reduced */
  const int64_t apart[2] = {8, 8};
  assert_hvd_ok(hvd_grouped_allreduce(2, down_sends, down, apart, HVD_FLOAT32, HVD_OP_SUM,
                                      "grp.overlap", NULL));
  for (int i = 0; i < 16; ++i) assert_true(a[i] == (float)hvd_size());
  runtime_still_works();
}

/* A grouped reducescatter whose members' outputs overlap would write one member's block
 * over another's: refused, and the same call with outputs apart works. */
static void group_reducescatter_outputs_overlap(void** state) {
  (void)state;
  const int size = hvd_size();
  enum { MAX_RANKS = 8 };
  if (size > MAX_RANKS) skip();
  float send[2][2 * MAX_RANKS * 2];
  for (int k = 0; k < 2; ++k)
    for (int i = 0; i < 4 * size; ++i) send[k][i] = (float)(k + 1);
  float out[8];  /* each member's block here: 2 rows of 2 */
  for (int i = 0; i < 8; ++i) out[i] = -1.0f;
  const void* sends[2] = {send[0], send[1]};
  const int ndims[2] = {2, 2};
  const int64_t shape[2] = {2 * size, 2};
  const int64_t* shapes[2] = {shape, shape};
  void* same[2] = {out, out + 2}; /* the second block starts inside the first */
  assert_hvd_status(hvd_grouped_reducescatter(2, sends, same, ndims, shapes, HVD_FLOAT32,
                                              HVD_OP_SUM, "grs.overlap", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_last_error_mentions("tensors 0 and 1", "written over another");
  for (int i = 0; i < 8; ++i) assert_true(out[i] == -1.0f); /* nothing was written */
  void* apart[2] = {out, out + 4};
  /* Only the last rank's outputs overlap: the others learn it from their call. */
  const int refuses = hvd_rank() == size - 1;
  assert_hvd_status(hvd_grouped_reducescatter(2, sends, refuses ? same : apart, ndims, shapes,
                                              HVD_FLOAT32, HVD_OP_SUM, "grs.overlap", NULL),
                    refuses ? HVD_ERR_INVALID_ARGUMENT : HVD_ERR_MISMATCH);
  for (int i = 0; i < 8; ++i) assert_true(out[i] == -1.0f);
  assert_hvd_ok(hvd_grouped_reducescatter(2, sends, apart, ndims, shapes, HVD_FLOAT32, HVD_OP_SUM,
                                          "grs.overlap", NULL));
  for (int i = 0; i < 8; ++i) assert_true(out[i] == (float)((i / 4 + 1) * size));
  runtime_still_works();
}

/* Automatic names stay in step whatever a call's fate on each rank: every rank makes
 * unnamed calls that are refused, each rank for a different reason (some were refused
 * before the name was taken, some after), and unnamed calls after them still match. */
static void refused_calls_keep_automatic_names_in_step(void** state) {
  (void)state;
  const int rank = hvd_rank();
  const int odd = rank % 2;
  float v[4] = {0};
  int64_t shape[1] = {4};
  void* out = NULL;
  int64_t dim0 = 0;
  hvd_handle_t h;
  hvd_op_options_t opts;
  assert_hvd_ok(hvd_op_options_init(&opts));
  assert_hvd_status(hvd_allreduce_async(v, v, 4, odd ? (hvd_dtype_t)99 : HVD_FLOAT32, HVD_OP_SUM, NULL,
                                        NULL, odd ? &h : NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_broadcast(odd ? v : NULL, 4, HVD_FLOAT32, odd ? -1 : 0, NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  const int64_t splits[64] = {5};
  assert_hvd_status(hvd_alltoall(v, 1, shape, odd ? (hvd_dtype_t)77 : HVD_FLOAT32, odd ? NULL : splits,
                                 &out, &dim0, NULL, NULL, NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_allgather(v, odd ? -1 : 1, shape, HVD_FLOAT32, odd ? &out : NULL, &dim0, NULL, NULL,
                                  NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  const void* sends[1] = {v};
  assert_hvd_status(hvd_grouped_allreduce(odd ? 0 : 1, sends, NULL, shape, HVD_FLOAT32, HVD_OP_SUM, NULL, NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  opts.process_set_id = 4242;  /* no such set */
  assert_hvd_status(hvd_allreduce_async(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, NULL, &opts, &h),
                    HVD_ERR_INVALID_ARGUMENT);
  /* Unnamed calls of every kind still match across ranks. */
  runtime_still_works();
  for (int i = 0; i < 4; ++i) v[i] = 1;
  assert_hvd_ok(hvd_broadcast(v, 4, HVD_FLOAT32, 0, NULL));
  assert_hvd_ok(hvd_allgather(v, 1, shape, HVD_FLOAT32, &out, &dim0, NULL, NULL, NULL));
  assert_int_equal(dim0, 4 * hvd_size());
  hvd_free(out);
  runtime_still_works();
}

/* Ranks that pass groups of different sizes: the mismatch reaches every member on
 * every rank, the members only some ranks passed included (they waited for ever). */
static void groups_of_different_sizes(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size == 1) skip();
  float v[3][4] = {{1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}};
  const void* sends[3] = {v[0], v[1], v[2]};
  void* recvs[3] = {v[0], v[1], v[2]};
  const int64_t counts[3] = {4, 4, 4};
  const int n = rank == size - 1 ? 3 : 1 + rank % 2;  /* the last rank passes the most */
  assert_hvd_status(hvd_grouped_allreduce(n, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM,
                                          "grp.sizes", NULL),
                    HVD_ERR_MISMATCH);
  assert_last_error_mentions("grp.sizes", "group");
  const int64_t shape[1] = {4};
  const int64_t* shapes[3] = {shape, shape, shape};
  const int ndims[3] = {1, 1, 1};
  void* outs[3] = {NULL, NULL, NULL};
  int64_t dim0s[3] = {0, 0, 0};
  assert_hvd_status(hvd_grouped_allgather(n, sends, ndims, shapes, HVD_FLOAT32, outs, dim0s, NULL,
                                          "grp.gather.sizes", NULL),
                    HVD_ERR_MISMATCH);
  for (int i = 0; i < 3; ++i) hvd_free(outs[i]);
  runtime_still_works();
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
      cmocka_unit_test(mismatched_allreduce_shape), cmocka_unit_test(mismatched_broadcast_shape),
      cmocka_unit_test(shape_given_on_some_ranks), cmocka_unit_test(invalid_options_shape),
      cmocka_unit_test(refused_calls_keep_automatic_names_in_step),
      cmocka_unit_test(mismatched_bool_average), cmocka_unit_test(mismatched_adasum),
      cmocka_unit_test(agreed_impossible_reductions), cmocka_unit_test(scalar_rows),
      cmocka_unit_test(groups_of_different_sizes),
      cmocka_unit_test(group_outputs_overlap),
      cmocka_unit_test(group_reducescatter_outputs_overlap),
  };
  return cmocka_run_group_tests_name("errors", tests, tu_group_init, tu_group_shutdown);
}
