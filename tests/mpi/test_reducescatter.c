/* Reducescatter: SUM and AVERAGE, uneven first dimension, prescale/postscale, in place,
 * every dtype that can be summed; MIN, MAX and PRODUCT (beyond Horovod's two ops). */
#include "test_util.h"

static void sum_and_average_uneven_rows(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  const int64_t dims[] = {0, 1, 5, 2 * size + 1, 97};
  for (int t = 0; t < NUM_DTYPES; ++t) {
    hvd_dtype_t d = kAllDtypes[t];
    for (int k = 0; k < 5; ++k) {
      for (int avg = 0; avg < 2; ++avg) {
        if (d == HVD_BOOL && avg) continue;
        const int64_t dim0 = dims[k], cols = 3;
        int64_t shape[2] = {dim0, cols};
        void* send = tu_alloc((size_t)(dim0 * cols) * tu_dtype_size(d));
        for (int64_t i = 0; i < dim0 * cols; ++i) tu_set(send, d, i, (double)((i + rank) % 4) * size);
        int64_t my_rows = hvd_reducescatter_rows(dim0, rank, size), first_row = 0;
        for (int q = 0; q < rank; ++q) first_row += hvd_reducescatter_rows(dim0, q, size);
        void* recv = tu_alloc((size_t)(my_rows * cols) * tu_dtype_size(d));
        char name[48];
        snprintf(name, sizeof name, "rs.%d.%lld.%d", (int)d, (long long)dim0, avg);
        assert_hvd_ok(hvd_reducescatter(send, recv, 2, shape, d, avg ? HVD_OP_AVERAGE : HVD_OP_SUM,
                                        name, NULL));
        for (int64_t i = 0; i < my_rows * cols; ++i) {
          int64_t g = first_row * cols + i;
          double sum = 0;
          for (int q = 0; q < size; ++q) sum += (double)((g + q) % 4) * size;
          double want = avg ? sum / size : sum;
          if (d == HVD_BOOL) want = want != 0;
          if (!tu_close(tu_get(recv, d, i), want, d))
            fail_msg("%s [%lld]: %g != %g", name, (long long)i, tu_get(recv, d, i), want);
        }
        free(send);
        free(recv);
      }
    }
  }
}

/* MIN, MAX and PRODUCT reduce element by element like allreduce's, then scatter: each
 * rank's block holds the reduction of every rank's rows (values that depend on the
 * rank, with a negative one, so a sum or a wrong rank's data cannot pass). */
static void min_max_product(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  const hvd_reduce_op_t ops[] = {HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};
  const hvd_dtype_t dtypes[] = {HVD_INT32, HVD_INT64, HVD_FLOAT32, HVD_FLOAT64};
  const int64_t dim0 = 2 * size + 1, cols = 2;
  int64_t shape[2] = {dim0, cols};
  const int64_t my_rows = hvd_reducescatter_rows(dim0, rank, size);
  int64_t first_row = 0;
  for (int q = 0; q < rank; ++q) first_row += hvd_reducescatter_rows(dim0, q, size);
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; ++o) {
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; ++t) {
      const hvd_dtype_t d = dtypes[t];
      void* send = tu_alloc((size_t)(dim0 * cols) * tu_dtype_size(d));
      void* recv = tu_alloc((size_t)(my_rows * cols) * tu_dtype_size(d));
      /* Element g of rank q: (g + q) % 3 - 1, one of -1, 0, 1 (products stay exact). */
      for (int64_t i = 0; i < dim0 * cols; ++i) tu_set(send, d, i, (double)((i + rank) % 3 - 1));
      char name[48];
      snprintf(name, sizeof name, "rs.op%d.%d", (int)ops[o], (int)d);
      assert_hvd_ok(hvd_reducescatter(send, recv, 2, shape, d, ops[o], name, NULL));
      for (int64_t i = 0; i < my_rows * cols; ++i) {
        const int64_t g = first_row * cols + i;
        double want = (double)((g + 0) % 3 - 1);
        for (int q = 1; q < size; ++q) {
          const double v = (double)((g + q) % 3 - 1);
          want = ops[o] == HVD_OP_MIN ? fmin(want, v) : ops[o] == HVD_OP_MAX ? fmax(want, v) : want * v;
        }
        if (!tu_close(tu_get(recv, d, i), want, d))
          fail_msg("%s [%lld]: %g != %g", name, (long long)i, tu_get(recv, d, i), want);
      }
      free(send);
      free(recv);
    }
  }
}

static void scaling_and_in_place(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  const int64_t dim0 = 2 * size;
  double* buf = tu_alloc(sizeof(double) * (size_t)dim0);
  for (int64_t i = 0; i < dim0; ++i) buf[i] = (double)(i + rank);
  hvd_op_options_t opts;
  hvd_op_options_init(&opts);
  opts.prescale_factor = 2.0;
  opts.postscale_factor = 0.5;
  int64_t shape[1] = {dim0};
  double expect[2];
  for (int j = 0; j < 2; ++j) {
    int64_t g = 2 * rank + j;
    double sum = 0;
    for (int q = 0; q < size; ++q) sum += (double)(g + q);
    expect[j] = sum; /* x2 then x0.5 */
  }
  assert_hvd_ok(hvd_reducescatter(buf, buf, 1, shape, HVD_FLOAT64, HVD_OP_SUM, "scaled", &opts));
  assert_true(fabs(buf[0] - expect[0]) < 1e-12);
  assert_true(fabs(buf[1] - expect[1]) < 1e-12);
  free(buf);
}

/* Many small reducescatters in flight at once are fused: rows uneven per tensor
 * (0 to 6 rows of 3), some in place, AVERAGE with scaling on some, int32 on others
 * (a different dtype cannot share a buffer). Every result is checked, and fewer
 * collectives ran than tensors. */
static void many_small_fused(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  enum { N = 96, COLS = 3, MAX_ROWS = 6 };
  static double send[N][MAX_ROWS * COLS], recv[N][MAX_ROWS * COLS];
  static int32_t isend[N][MAX_ROWS * COLS], irecv[N][MAX_ROWS * COLS];
  hvd_handle_t h[N];
  hvd_op_options_t scaled;
  hvd_op_options_init(&scaled);
  scaled.prescale_factor = 3.0;
  scaled.postscale_factor = 0.5;
  assert_hvd_ok(hvd_barrier(0));
  const uint64_t before = tu_collectives();
  for (int k = 0; k < N; ++k) {
    const int64_t dim0 = k % (MAX_ROWS + 1);
    int64_t shape[2] = {dim0, COLS};
    char name[32];
    snprintf(name, sizeof name, "rs.fused.%d", k);
    for (int64_t i = 0; i < dim0 * COLS; ++i) {
      send[k][i] = (double)(k + i + rank);
      isend[k][i] = (int32_t)(k * i + rank);
    }
    switch (k % 4) {
      case 0:
        assert_hvd_ok(hvd_reducescatter_async(send[k], recv[k], 2, shape, HVD_FLOAT64, HVD_OP_SUM,
                                              name, NULL, &h[k]));
        break;
      case 1: /* in place */
        assert_hvd_ok(hvd_reducescatter_async(send[k], send[k], 2, shape, HVD_FLOAT64, HVD_OP_SUM,
                                              name, NULL, &h[k]));
        break;
      case 2:
        assert_hvd_ok(hvd_reducescatter_async(send[k], recv[k], 2, shape, HVD_FLOAT64,
                                              HVD_OP_AVERAGE, name, &scaled, &h[k]));
        break;
      default:
        assert_hvd_ok(hvd_reducescatter_async(isend[k], irecv[k], 2, shape, HVD_INT32, HVD_OP_SUM,
                                              name, NULL, &h[k]));
        break;
    }
  }
  for (int k = 0; k < N; ++k) assert_hvd_ok(hvd_wait(h[k]));
  const uint64_t ran = tu_collectives() - before;
  for (int k = 0; k < N; ++k) {
    const int64_t dim0 = k % (MAX_ROWS + 1);
    int64_t first_row = 0;
    for (int q = 0; q < rank; ++q) first_row += hvd_reducescatter_rows(dim0, q, size);
    const int64_t mine = hvd_reducescatter_rows(dim0, rank, size) * COLS;
    for (int64_t i = 0; i < mine; ++i) {
      const int64_t g = first_row * COLS + i;
      double sum = 0;
      int64_t isum = 0;
      for (int q = 0; q < size; ++q) {
        sum += (double)(k + g + q);
        isum += k * g + q;
      }
      switch (k % 4) {
        case 0: assert_float_equal(recv[k][i], sum, 1e-9); break;
        case 1: assert_float_equal(send[k][i], sum, 1e-9); break;
        case 2: assert_float_equal(recv[k][i], 3.0 * sum / size * 0.5, 1e-9); break;
        default: assert_int_equal(irecv[k][i], isum); break;
      }
    }
  }
  /* Three kinds (SUM, AVERAGE scaled, int32) of 96 tensors: fused unless every
   * tensor arrived in a round of its own. A lone rank has no peer to wait for, so its
   * background thread may keep up with the enqueues and run each alone: only with
   * peers is fusion what must happen. */
  if (size > 1 && ran >= N) fail_msg("%llu collectives for %d small reducescatters: none fused", (unsigned long long)ran, N);
}

/* A grouped reducescatter: a large member (above the in-place size) and small ones
 * with uneven rows, AVERAGE, in one collective; twice (the second from the cache). */
static void grouped_reducescatter(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  enum { BIG_ROWS = 40000, COLS = 2 };
  const int64_t dims[3] = {BIG_ROWS, 5, 1};
  float* send[3];
  float* recv[3];
  int64_t shape[3][2];
  const int64_t* shapes[3] = {shape[0], shape[1], shape[2]};
  const int ndims[3] = {2, 2, 2};
  for (int k = 0; k < 3; ++k) {
    shape[k][0] = dims[k];
    shape[k][1] = COLS;
    send[k] = tu_alloc(sizeof(float) * (size_t)(dims[k] * COLS));
    recv[k] = tu_alloc(sizeof(float) * (size_t)(dims[k] * COLS));
  }
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 3; ++k)
      for (int64_t i = 0; i < dims[k] * COLS; ++i) send[k][i] = (float)((i + k) % 7 + rank);
    const uint64_t before = tu_collectives();
    assert_hvd_ok(hvd_grouped_reducescatter(3, (const void* const*)send, (void* const*)recv, ndims,
                                            shapes, HVD_FLOAT32, HVD_OP_AVERAGE, "grs", NULL));
    assert_int_equal(tu_collectives() - before, 1);
    for (int k = 0; k < 3; ++k) {
      int64_t first_row = 0;
      for (int q = 0; q < rank; ++q) first_row += hvd_reducescatter_rows(dims[k], q, size);
      const int64_t mine = hvd_reducescatter_rows(dims[k], rank, size) * COLS;
      for (int64_t i = 0; i < mine; ++i) {
        const int64_t g = first_row * COLS + i;
        const double want = (double)((g + k) % 7) + (size - 1) / 2.0;
        if (fabs(recv[k][i] - want) > 1e-5) fail_msg("grs.%d [%lld]: %g != %g", k, (long long)i, recv[k][i], want);
      }
    }
  }
  for (int k = 0; k < 3; ++k) {
    free(send[k]);
    free(recv[k]);
  }
}

/* Segments of many chunks (mpi-reducescatter-chunks-np3 runs with 4 KiB chunks): every
 * dtype, SUM and AVERAGE, out of place and in place, rows that do not divide evenly
 * (segments whose last chunks differ), n tensors at once (fused where they fit), among
 * global ranks first..size-1. Values are small integers whose
 * sums are exact in every dtype, so every value is checked exactly. */
static void scatter_in_chunks(hvd_dtype_t d, int64_t dim0, int avg, int in_place, int n, int first,
                              const hvd_op_options_t* opts, const char* tag) {
  enum { COLS = 3, MAX_TENSORS = 3 };
  const int me = hvd_rank() - first, size = hvd_size() - first;
  void* send[MAX_TENSORS];
  void* recv[MAX_TENSORS];
  hvd_handle_t h[MAX_TENSORS];
  for (int k = 0; k < n; ++k) {
    const int64_t rows = dim0 + k;
    int64_t shape[2] = {rows, COLS};
    send[k] = tu_alloc((size_t)(rows * COLS + 1) * tu_dtype_size(d));
    recv[k] = in_place ? send[k] : tu_alloc((size_t)(rows * COLS + 1) * tu_dtype_size(d));
    for (int64_t i = 0; i < rows * COLS; ++i) tu_set(send[k], d, i, (double)((i + me + k) % 4) * size);
    char name[64];
    snprintf(name, sizeof name, "%s.%d.%lld.%d.%d.%d", tag, (int)d, (long long)dim0, avg, in_place, k);
    assert_hvd_ok(hvd_reducescatter_async(send[k], recv[k], 2, shape, d,
                                          avg ? HVD_OP_AVERAGE : HVD_OP_SUM, name, opts, &h[k]));
  }
  for (int k = 0; k < n; ++k) {
    assert_hvd_ok(hvd_wait(h[k]));
    const int64_t rows = dim0 + k;
    int64_t first_row = 0;
    for (int q = 0; q < me; ++q) first_row += hvd_reducescatter_rows(rows, q, size);
    for (int64_t i = 0; i < hvd_reducescatter_rows(rows, me, size) * COLS; ++i) {
      const int64_t g = first_row * COLS + i;
      double sum = 0;
      for (int q = 0; q < size; ++q) sum += (double)((g + q + k) % 4) * size;
      double want = avg ? sum / size : sum;
      if (d == HVD_BOOL) want = want != 0;
      if (tu_get(recv[k], d, i) != want)
        fail_msg("%s dtype %d tensor %d [%lld]: %g != %g", tag, (int)d, k, (long long)i,
                 tu_get(recv[k], d, i), want);
    }
    if (!in_place) free(recv[k]);
    free(send[k]);
  }
}

static void segments_of_many_chunks(void** state) {
  (void)state;
  const int size = hvd_size();
  for (int t = 0; t < NUM_DTYPES; ++t) {
    const hvd_dtype_t d = kAllDtypes[t];
    for (int avg = 0; avg < (d == HVD_BOOL ? 1 : 2); ++avg) {
      scatter_in_chunks(d, 1400 * size + 3, avg, 0, 1, 0, NULL, "rs.chunks");
      scatter_in_chunks(d, 1400 * size + 1, avg, 1, 1, 0, NULL, "rs.chunks");
    }
  }
  scatter_in_chunks(HVD_FLOAT32, 900 * size + 2, 1, 0, 3, 0, NULL, "rs.chunks.fused");
  scatter_in_chunks(HVD_INT16, 900 * size + 1, 0, 0, 3, 0, NULL, "rs.chunks.fused");
  if (size < 3) return;
  hvd_op_options_t opts;
  const int32_t id = tu_add_set_without_rank0(&opts);
  if (hvd_process_set_included(id) == 1) {
    scatter_in_chunks(HVD_FLOAT64, 2000 * size + 1, 0, 0, 1, 1, &opts, "rs.chunks.set");
    scatter_in_chunks(HVD_BFLOAT16, 2000 * size + 1, 1, 0, 3, 1, &opts, "rs.chunks.set");
  }
  assert_hvd_ok(hvd_remove_process_set(id));
}

static void shape_mismatch(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  if (size < 2) skip();
  float send[16] = {0}, recv[16];
  int64_t shape[1] = {rank == 0 ? 4 : 6};
  assert_hvd_status(hvd_reducescatter(send, recv, 1, shape, HVD_FLOAT32, HVD_OP_SUM, "rs.bad", NULL),
                    HVD_ERR_MISMATCH);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sum_and_average_uneven_rows),
      cmocka_unit_test(min_max_product),
      cmocka_unit_test(scaling_and_in_place),
      cmocka_unit_test(many_small_fused),
      cmocka_unit_test(grouped_reducescatter),
      cmocka_unit_test(segments_of_many_chunks),
      cmocka_unit_test(shape_mismatch),
  };
  return cmocka_run_group_tests_name("reducescatter", tests, tu_group_init, tu_group_shutdown);
}
