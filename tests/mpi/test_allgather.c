/* Allgather: rows that differ per rank, every dtype, multi-dimensional rows, fusion of
 * several allgathers, the options' allocator, and shape mismatches. */
#include "test_util.h"

/* Rank r contributes r + 1 + extra rows of `cols` columns; value = 1000 r + 10 row + col. */
static int64_t rows_of(int r, int extra) { return r + 1 + extra; }
static double value_at(int r, int64_t row, int64_t col) {
  return (double)((1000 * r + 10 * row + col) % 120);
}

static void check_gathered(const void* out, hvd_dtype_t d, int64_t cols, int extra, int64_t dim0,
                           const int64_t* per_rank) {
  const int size = hvd_size();
  int64_t want_dim0 = 0;
  for (int r = 0; r < size; ++r) {
    want_dim0 += rows_of(r, extra);
    if (per_rank) assert_int_equal(per_rank[r], rows_of(r, extra));
  }
  assert_int_equal(dim0, want_dim0);
  int64_t at = 0;
  for (int r = 0; r < size; ++r)
    for (int64_t row = 0; row < rows_of(r, extra); ++row)
      for (int64_t c = 0; c < cols; ++c, ++at) {
        double want = value_at(r, row, c);
        if (d == HVD_BOOL) want = want != 0;
        double got = tu_get(out, d, at);
        if (got != want)
          fail_msg("dtype %d rank %d row %lld col %lld: %g != %g", (int)d, r, (long long)row,
                   (long long)c, got, want);
      }
}

static void every_dtype_uneven_rows(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  enum { COLS = 3 };
  hvd_handle_t handles[NUM_DTYPES];
  void* sends[NUM_DTYPES];
  void* outs[NUM_DTYPES];
  int64_t dim0[NUM_DTYPES];
  int64_t* per_rank[NUM_DTYPES];
  for (int t = 0; t < NUM_DTYPES; ++t) {
    hvd_dtype_t d = kAllDtypes[t];
    int64_t shape[2] = {rows_of(rank, t % 2), COLS};
    sends[t] = tu_alloc((size_t)(shape[0] * COLS) * tu_dtype_size(d));
    for (int64_t row = 0; row < shape[0]; ++row)
      for (int64_t c = 0; c < COLS; ++c) tu_set(sends[t], d, row * COLS + c, value_at(rank, row, c));
    per_rank[t] = tu_alloc(sizeof(int64_t) * (size_t)size);
    char name[32];
    snprintf(name, sizeof name, "gather.%d", t);
    assert_hvd_ok(hvd_allgather_async(sends[t], 2, shape, d, &outs[t], &dim0[t], per_rank[t], name,
                                      NULL, &handles[t]));
  }
  for (int t = 0; t < NUM_DTYPES; ++t) {
    assert_hvd_ok(hvd_wait(handles[t]));
    check_gathered(outs[t], kAllDtypes[t], COLS, t % 2, dim0[t], per_rank[t]);
    hvd_free(outs[t]);
    free(sends[t]);
    free(per_rank[t]);
  }
}

static void zero_rows_and_repeated_steps(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  for (int step = 0; step < 6; ++step) {
    /* Rows change between steps: the cached response must be renegotiated. */
    int64_t mine = (rank + step) % 3;
    int32_t* send = tu_alloc(sizeof(int32_t) * (size_t)(mine ? mine : 1));
    for (int64_t i = 0; i < mine; ++i) send[i] = rank * 100 + step;
    int64_t shape[1] = {mine};
    void* out = NULL;
    int64_t dim0 = -1;
    assert_hvd_ok(hvd_allgather(send, 1, shape, HVD_INT32, &out, &dim0, NULL, "steps", NULL));
    int64_t at = 0;
    for (int r = 0; r < size; ++r)
      for (int64_t i = 0; i < (r + step) % 3; ++i, ++at) assert_int_equal(((int32_t*)out)[at], r * 100 + step);
    assert_int_equal(dim0, at);
    assert_non_null(out);
    hvd_free(out);
    free(send);
  }
}

/* Blocks of many chunks (mpi-allgather-chunks-np3 runs with 4 KiB chunks): rank r sends
 * big_rows(r, k) rows to tensor k, rank 1 none to tensor 0; every value is checked
 * exactly. */
static int64_t big_rows(int r, int k) { return r == 1 ? 11 * k : 1500 + 977 * r + 11 * k; }

/* n tensors of dtype d at once (fused where they fit), among global ranks first..size-1. */
static void gather_in_chunks(hvd_dtype_t d, int n, int first, const hvd_op_options_t* opts,
                             const char* tag) {
  enum { COLS = 3, MAX_TENSORS = 3 };
  const int rank = hvd_rank(), size = hvd_size();
  void* sends[MAX_TENSORS];
  void* outs[MAX_TENSORS];
  int64_t dim0[MAX_TENSORS];
  hvd_handle_t h[MAX_TENSORS];
  for (int k = 0; k < n; ++k) {
    int64_t shape[2] = {big_rows(rank, k), COLS};
    sends[k] = tu_alloc((size_t)(shape[0] * COLS + 1) * tu_dtype_size(d));
    for (int64_t row = 0; row < shape[0]; ++row)
      for (int64_t c = 0; c < COLS; ++c) tu_set(sends[k], d, row * COLS + c, value_at(rank, row, c + k));
    char name[48];
    snprintf(name, sizeof name, "%s.%d.%d", tag, (int)d, k);
    assert_hvd_ok(hvd_allgather_async(sends[k], 2, shape, d, &outs[k], &dim0[k], NULL, name, opts, &h[k]));
  }
  for (int k = 0; k < n; ++k) {
    assert_hvd_ok(hvd_wait(h[k]));
    int64_t at = 0;
    for (int r = first; r < size; ++r)
      for (int64_t row = 0; row < big_rows(r, k); ++row)
        for (int64_t c = 0; c < COLS; ++c, ++at) {
          double want = value_at(r, row, c + k);
          if (d == HVD_BOOL) want = want != 0;
          if (tu_get(outs[k], d, at) != want)
            fail_msg("%s dtype %d tensor %d rank %d row %lld col %lld: %g != %g", tag, (int)d, k, r,
                     (long long)row, (long long)c, tu_get(outs[k], d, at), want);
        }
    assert_int_equal(dim0[k] * COLS, at);
    hvd_free(outs[k]);
    free(sends[k]);
  }
}

static void blocks_of_many_chunks(void** state) {
  (void)state;
  const int size = hvd_size();
  for (int t = 0; t < NUM_DTYPES; ++t) gather_in_chunks(kAllDtypes[t], 1, 0, NULL, "chunks.alone");
  gather_in_chunks(HVD_FLOAT32, 3, 0, NULL, "chunks.fused");
  gather_in_chunks(HVD_INT8, 3, 0, NULL, "chunks.fused");
  if (size < 3) return;
  /* Ranks 1.. as a set: its rank 0 (global rank 1) sends nothing to tensor 0. */
  hvd_op_options_t opts;
  const int32_t id = tu_add_set_without_rank0(&opts);
  if (hvd_process_set_included(id) == 1) {
    gather_in_chunks(HVD_FLOAT64, 1, 1, &opts, "chunks.set");
    gather_in_chunks(HVD_UINT16, 3, 1, &opts, "chunks.set.fused");
  }
  assert_hvd_ok(hvd_remove_process_set(id));
}

typedef struct {
  int calls;
  size_t bytes;
} alloc_log;

static void* counting_allocator(size_t nbytes, int device, void* user) {
  alloc_log* log = user;
  assert_int_equal(device, HVD_DEVICE_CPU);
  log->calls++;
  log->bytes += nbytes;
  return malloc(nbytes ? nbytes : 1);
}

static void uses_options_allocator(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  alloc_log log = {0, 0};
  hvd_op_options_t opts;
  hvd_op_options_init(&opts);
  opts.allocator = counting_allocator;
  opts.allocator_user_data = &log;
  double send[2] = {rank, rank + 0.5};
  int64_t shape[1] = {2};
  void* out = NULL;
  int64_t dim0 = 0;
  assert_hvd_ok(hvd_allgather(send, 1, shape, HVD_FLOAT64, &out, &dim0, NULL, "alloc", &opts));
  assert_int_equal(log.calls, 1);
  assert_int_equal(log.bytes, sizeof(double) * 2 * (size_t)size);
  for (int r = 0; r < size; ++r) assert_true(((double*)out)[2 * r + 1] == r + 0.5);
  free(out);
}

static void many_small_fused(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  enum { N = 300 };
  hvd_handle_t h[N];
  void* out[N];
  int64_t dim0[N];
  float send[N][4];
  for (int k = 0; k < N; ++k) {
    int64_t shape[2] = {rank % 2 + 1, 2};
    for (int i = 0; i < 4; ++i) send[k][i] = (float)(k * 10 + rank);
    char name[32];
    snprintf(name, sizeof name, "small.%d", k);
    assert_hvd_ok(hvd_allgather_async(send[k], 2, shape, HVD_FLOAT32, &out[k], &dim0[k], NULL, name,
                                      NULL, &h[k]));
  }
  for (int k = 0; k < N; ++k) {
    assert_hvd_ok(hvd_wait(h[k]));
    int64_t at = 0;
    for (int r = 0; r < size; ++r)
      for (int i = 0; i < (r % 2 + 1) * 2; ++i, ++at)
        assert_true(((float*)out[k])[at] == (float)(k * 10 + r));
    assert_int_equal(dim0[k] * 2, at);
    hvd_free(out[k]);
  }
}

/* A grouped allgather: three tensors of different shapes and rows per rank (one
 * empty on even ranks) complete under one handle in one collective; NULL arrays are
 * refused with a message. */
static void grouped_allgather(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  const int64_t rows[3] = {rank + 1, 2, rank % 2 ? 3 : 0};
  const int64_t cols[3] = {1, 4, 2};
  int64_t shape0[1] = {rows[0]}, shape1[2] = {rows[1], cols[1]}, shape2[2] = {rows[2], cols[2]};
  const int64_t* shapes[3] = {shape0, shape1, shape2};
  const int ndims[3] = {1, 2, 2};
  double data[3][16];
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < 16; ++i) data[k][i] = 100.0 * k + 10.0 * rank + i;
  const void* sends[3] = {data[0], data[1], data[2]};
  void* outs[3] = {NULL, NULL, NULL};
  int64_t dim0[3];
  int64_t* per_rank = tu_alloc(sizeof(int64_t) * 3 * (size_t)size);
  const uint64_t before = tu_collectives();
  assert_hvd_ok(hvd_grouped_allgather(3, sends, ndims, shapes, HVD_FLOAT64, outs, dim0, per_rank,
                                      "gag", NULL));
  assert_int_equal(tu_collectives() - before, 1);
  for (int k = 0; k < 3; ++k) {
    int64_t at = 0;
    for (int r = 0; r < size; ++r) {
      const int64_t r_rows = k == 0 ? r + 1 : k == 1 ? 2 : (r % 2 ? 3 : 0);
      assert_int_equal(per_rank[k * size + r], r_rows);
      for (int64_t i = 0; i < r_rows * cols[k]; ++i, ++at)
        assert_float_equal(((double*)outs[k])[at], 100.0 * k + 10.0 * r + (double)i, 0);
    }
    assert_int_equal(dim0[k] * cols[k], at);
    hvd_free(outs[k]);
  }
  free(per_rank);
  assert_hvd_status(hvd_grouped_allgather(3, sends, NULL, shapes, HVD_FLOAT64, outs, dim0, NULL,
                                          "gag.bad", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_non_null(strstr(hvd_last_error(), "ndims"));
  assert_hvd_status(hvd_grouped_allgather(0, sends, ndims, shapes, HVD_FLOAT64, outs, dim0, NULL,
                                          "gag.none", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
}

static void trailing_dims_mismatch(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) skip();
  int64_t shape[2] = {1, rank == size - 1 ? 3 : 2};
  float send[3] = {1, 2, 3};
  void* out = NULL;
  int64_t dim0;
  assert_hvd_status(hvd_allgather(send, 2, shape, HVD_FLOAT32, &out, &dim0, NULL, "bad.cols", NULL),
                    HVD_ERR_MISMATCH);
  assert_non_null(strstr(hvd_last_error(), "bad.cols"));
  assert_null(out);
  /* Still works afterwards. */
  int64_t ok_shape[1] = {1};
  assert_hvd_ok(hvd_allgather(send, 1, ok_shape, HVD_FLOAT32, &out, &dim0, NULL, "after", NULL));
  assert_int_equal(dim0, size);
  hvd_free(out);
}

static void bad_arguments(void** state) {
  (void)state;
  int64_t shape[2] = {2, 2};
  float send[4] = {0};
  void* out;
  int64_t dim0;
  hvd_handle_t h;
  assert_hvd_status(hvd_allgather(send, 0, shape, HVD_FLOAT32, &out, &dim0, NULL, "a", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_allgather(send, 2, NULL, HVD_FLOAT32, &out, &dim0, NULL, "a", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_allgather(NULL, 2, shape, HVD_FLOAT32, &out, &dim0, NULL, "a", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_allgather(send, 2, shape, HVD_FLOAT32, NULL, &dim0, NULL, "a", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_allgather(send, 2, shape, (hvd_dtype_t)77, &out, &dim0, NULL, "a", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  int64_t negative[2] = {-1, 2};
  assert_hvd_status(hvd_allgather(send, 2, negative, HVD_FLOAT32, &out, &dim0, NULL, "a", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_hvd_status(hvd_allgather_async(send, 2, shape, HVD_FLOAT32, &out, &dim0, NULL, "a", NULL, NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  (void)h;
}

/* First dimensions 17, 32, 81, 12, ... per rank (the example sizes). */
static void listed_first_dimensions(void** state) {
  (void)state;
  static const int64_t dims[] = {17, 32, 81, 12};
  const int rank = hvd_rank(), size = hvd_size();
  const int64_t mine = dims[rank % 4];
  int64_t shape[2] = {mine, 5};
  int32_t* send = tu_alloc(sizeof(int32_t) * (size_t)(mine * 5));
  for (int64_t i = 0; i < mine * 5; ++i) send[i] = rank * 1000 + (int32_t)i;
  void* out = NULL;
  int64_t dim0, per[64];
  assert_hvd_ok(hvd_allgather(send, 2, shape, HVD_INT32, &out, &dim0, per, "dims.17.32.81.12", NULL));
  int64_t at = 0;
  for (int r = 0; r < size; ++r) {
    assert_int_equal(per[r], dims[r % 4]);
    for (int64_t i = 0; i < dims[r % 4] * 5; ++i, ++at) assert_int_equal(((int32_t*)out)[at], r * 1000 + i);
  }
  assert_int_equal(dim0 * 5, at);
  hvd_free(out);
  free(send);
}

/* Under HOROVOD_HIERARCHICAL_ALLGATHER=1 on several nodes with several ranks on some,
 * the gathered bytes cross nodes through the node leaders only. */
static void hierarchical_traffic(void** state) {
  (void)state;
  const char* v = getenv("HOROVOD_HIERARCHICAL_ALLGATHER");
  int32_t layout[2] = {hvd_local_rank() == 0, hvd_local_size()};
  assert_hvd_ok(hvd_allreduce(&layout[0], &layout[0], 1, HVD_INT32, HVD_OP_SUM, "ag.nodes"));
  assert_hvd_ok(hvd_allreduce(&layout[1], &layout[1], 1, HVD_INT32, HVD_OP_MAX, "ag.maxlocal"));
  const int hier = v && strcmp(v, "1") == 0 && layout[0] > 1 && layout[1] > 1;
  hvd_counters_t before = {.struct_size = sizeof(hvd_counters_t)}, after = before;
  int64_t shape[1] = {1000};
  float* send = tu_alloc(sizeof(float) * 1000);
  for (int i = 0; i < 1000; ++i) send[i] = (float)hvd_rank();
  void* out = NULL;
  int64_t dim0;
  assert_hvd_ok(hvd_get_counters(&before));
  assert_hvd_ok(hvd_allgather(send, 1, shape, HVD_FLOAT32, &out, &dim0, NULL, "ag.traffic", NULL));
  assert_hvd_ok(hvd_get_counters(&after));
  for (int r = 0; r < hvd_size(); ++r) assert_true(((float*)out)[1000 * r + 999] == (float)r);
  if (hier) {
    assert_int_equal(after.global_bytes, before.global_bytes);
    if (hvd_local_rank() == 0) assert_true(after.cross_bytes > before.cross_bytes);
    else assert_int_equal(after.cross_bytes, before.cross_bytes);
  } else {
    assert_int_equal(after.cross_bytes, before.cross_bytes);
  }
  hvd_free(out);
  free(send);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_dtype_uneven_rows), cmocka_unit_test(zero_rows_and_repeated_steps),
      cmocka_unit_test(uses_options_allocator),  cmocka_unit_test(many_small_fused),
      cmocka_unit_test(grouped_allgather),
      cmocka_unit_test(trailing_dims_mismatch),  cmocka_unit_test(bad_arguments),
      cmocka_unit_test(hierarchical_traffic),
      cmocka_unit_test(listed_first_dimensions), cmocka_unit_test(blocks_of_many_chunks),
  };
  return cmocka_run_group_tests_name("allgather", tests, tu_group_init, tu_group_shutdown);
}
