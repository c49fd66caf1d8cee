/* Alltoall: even and uneven splits, every dtype, received splits, bad splits. */
#include "test_util.h"

/* Rank s sends (s + d) % 3 rows to rank d; element value encodes (s, d, i). */
static int64_t split(int s, int d) { return (s + d) % 3; }
static double value(int s, int d, int64_t i) { return (double)((s * 7 + d * 3 + i) % 50); }

static void uneven_splits_every_dtype(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  enum { COLS = 2 };
  for (int t = 0; t < NUM_DTYPES; ++t) {
    hvd_dtype_t d = kAllDtypes[t];
    int64_t splits[64], rows = 0;
    for (int q = 0; q < size; ++q) rows += splits[q] = split(rank, q);
    void* send = tu_alloc((size_t)(rows * COLS) * tu_dtype_size(d));
    int64_t at = 0;
    for (int q = 0; q < size; ++q)
      for (int64_t i = 0; i < splits[q] * COLS; ++i, ++at) tu_set(send, d, at, value(rank, q, i));
    int64_t shape[2] = {rows, COLS};
    void* out = NULL;
    int64_t dim0 = -1, recv_splits[64];
    char name[32];
    snprintf(name, sizeof name, "a2a.%d", t);
    assert_hvd_ok(hvd_alltoall(send, 2, shape, d, splits, &out, &dim0, recv_splits, name, NULL));
    at = 0;
    for (int q = 0; q < size; ++q) {
      assert_int_equal(recv_splits[q], split(q, rank));
      for (int64_t i = 0; i < split(q, rank) * COLS; ++i, ++at) {
        double want = value(q, rank, i);
        if (d == HVD_BOOL) want = want != 0;
        if (tu_get(out, d, at) != want)
          fail_msg("dtype %d from %d [%lld]: %g != %g", (int)d, q, (long long)i, tu_get(out, d, at), want);
      }
    }
    assert_int_equal(dim0 * COLS, at);
    hvd_free(out);
    free(send);
  }
}

static void even_split_without_splits(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  int32_t* send = tu_alloc(sizeof(int32_t) * 2 * (size_t)size);
  for (int q = 0; q < size; ++q) send[2 * q] = send[2 * q + 1] = rank * 100 + q;
  int64_t shape[1] = {2 * size};
  void* out = NULL;
  int64_t dim0;
  for (int step = 0; step < 3; ++step) {
    assert_hvd_ok(hvd_alltoall(send, 1, shape, HVD_INT32, NULL, &out, &dim0, NULL, "even", NULL));
    assert_int_equal(dim0, 2 * size);
    for (int q = 0; q < size; ++q) assert_int_equal(((int32_t*)out)[2 * q + 1], q * 100 + rank);
    hvd_free(out);
  }
  free(send);
}

static void bad_splits(void** state) {
  (void)state;
  const int size = hvd_size();
  float send[8] = {0};
  int64_t shape[1] = {size + 1};
  void* out;
  int64_t dim0;
  if (size > 1)
    assert_hvd_status(hvd_alltoall(send, 1, shape, HVD_FLOAT32, NULL, &out, &dim0, NULL, "x", NULL),
                      HVD_ERR_INVALID_ARGUMENT);
  int64_t splits[64] = {0};
  splits[0] = size + 2; /* sums to more than shape[0] */
  assert_hvd_status(hvd_alltoall(send, 1, shape, HVD_FLOAT32, splits, &out, &dim0, NULL, "x", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
  splits[0] = -1;
  assert_hvd_status(hvd_alltoall(send, 1, shape, HVD_FLOAT32, splits, &out, &dim0, NULL, "x", NULL),
                    HVD_ERR_INVALID_ARGUMENT);
}

static void column_mismatch(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) skip();
  float send[64] = {0};
  int64_t shape[2] = {size, rank == 0 ? 2 : 1};
  void* out = NULL;
  int64_t dim0;
  assert_hvd_status(hvd_alltoall(send, 2, shape, HVD_FLOAT32, NULL, &out, &dim0, NULL, "cols", NULL),
                    HVD_ERR_MISMATCH);
}

/* Rank r sends r + 1 rows to each peer; the received splits say so. */
static void rank_r_sends_r_plus_one_rows(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  int64_t splits[64], rows = (int64_t)(rank + 1) * size;
  for (int q = 0; q < size; ++q) splits[q] = rank + 1;
  double* send = tu_alloc(sizeof(double) * (size_t)rows);
  for (int64_t i = 0; i < rows; ++i) send[i] = rank * 100.0 + (double)(i / (rank + 1));
  int64_t shape[1] = {rows};
  void* out = NULL;
  int64_t dim0, recv_splits[64];
  assert_hvd_ok(hvd_alltoall(send, 1, shape, HVD_FLOAT64, splits, &out, &dim0, recv_splits, "r.plus.one", NULL));
  int64_t at = 0;
  for (int q = 0; q < size; ++q) {
    assert_int_equal(recv_splits[q], q + 1);
    for (int i = 0; i <= q; ++i, ++at) assert_true(((double*)out)[at] == q * 100.0 + rank);
  }
  assert_int_equal(dim0, at);
  hvd_free(out);
  free(send);
}

/* Blocks of many chunks (mpi-alltoall-chunks-np3 runs with 4 KiB chunks): set rank s
 * sends big_split(s, d) rows to set rank d, none where s + d is a multiple of 3, so some
 * ranks' blocks run out rounds before others'; every value is checked exactly. */
static int64_t big_split(int s, int d) { return (s + d) % 3 == 0 ? 0 : 700 + 531 * s + 97 * d; }

static void exchange_in_chunks(hvd_dtype_t d, int first, const hvd_op_options_t* opts, const char* tag) {
  enum { COLS = 2 };
  const int me = hvd_rank() - first, n = hvd_size() - first;
  int64_t splits[64], rows = 0;
  for (int q = 0; q < n; ++q) rows += splits[q] = big_split(me, q);
  void* send = tu_alloc((size_t)(rows * COLS + 1) * tu_dtype_size(d));
  int64_t at = 0;
  for (int q = 0; q < n; ++q)
    for (int64_t i = 0; i < splits[q] * COLS; ++i, ++at) tu_set(send, d, at, value(me, q, i));
  int64_t shape[2] = {rows, COLS};
  void* out = NULL;
  int64_t dim0 = -1, recv_splits[64];
  char name[48];
  snprintf(name, sizeof name, "%s.%d", tag, (int)d);
  assert_hvd_ok(hvd_alltoall(send, 2, shape, d, splits, &out, &dim0, recv_splits, name, opts));
  at = 0;
  for (int q = 0; q < n; ++q) {
    assert_int_equal(recv_splits[q], big_split(q, me));
    for (int64_t i = 0; i < big_split(q, me) * COLS; ++i, ++at) {
      double want = value(q, me, i);
      if (d == HVD_BOOL) want = want != 0;
      if (tu_get(out, d, at) != want)
        fail_msg("%s dtype %d from %d [%lld]: %g != %g", tag, (int)d, q, (long long)i, tu_get(out, d, at), want);
    }
  }
  assert_int_equal(dim0 * COLS, at);
  hvd_free(out);
  free(send);
}

static void blocks_of_many_chunks(void** state) {
  (void)state;
  const int size = hvd_size();
  for (int t = 0; t < NUM_DTYPES; ++t) exchange_in_chunks(kAllDtypes[t], 0, NULL, "a2a.chunks");
  if (size < 3) return;
  hvd_op_options_t opts;
  const int32_t id = tu_add_set_without_rank0(&opts);
  if (hvd_process_set_included(id) == 1) {
    exchange_in_chunks(HVD_FLOAT64, 1, &opts, "a2a.chunks.set");
    exchange_in_chunks(HVD_INT8, 1, &opts, "a2a.chunks.set");
  }
  assert_hvd_ok(hvd_remove_process_set(id));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(uneven_splits_every_dtype),
      cmocka_unit_test(even_split_without_splits),
      cmocka_unit_test(bad_splits),
      cmocka_unit_test(column_mismatch),
      cmocka_unit_test(rank_r_sends_r_plus_one_rows),
      cmocka_unit_test(blocks_of_many_chunks),
  };
  return cmocka_run_group_tests_name("alltoall", tests, tu_group_init, tu_group_shutdown);
}
