/* Reducescatter: SUM and AVERAGE, uneven first dimension, prescale/postscale, in place,
 * every dtype that can be summed. */
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
      cmocka_unit_test(scaling_and_in_place),
      cmocka_unit_test(shape_mismatch),
  };
  return cmocka_run_group_tests_name("reducescatter", tests, tu_group_init, tu_group_shutdown);
}
