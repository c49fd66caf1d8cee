/* Hierarchical allreduce and allgather of device tensors through the public API
 * (HOROVOD_HIERARCHICAL_ALLREDUCE=1, HOROVOD_HIERARCHICAL_ALLGATHER=1) on several
 * "nodes": every reduce op and dtype, sizes 0, 1, local_size-1, odd and above the
 * fusion threshold, the traffic counters, and allgather with uneven rows. The
 * device test of what tests/mpi/test_hierarchical.c checks on host memory.
 * With HOROVOD_GPU_OPERATIONS=MPI ranks may share one GPU; with NCCL each rank needs
 * its own (NCCL refuses two ranks of a communicator on one device), which the test
 * picks itself before hvd_init (run with HVD_GPU_PINNING=0). */
#include "gpu_runtime_main.h"

static hvd_op_options_t device_options(void) {
  hvd_op_options_t o = HVD_OP_OPTIONS_INITIALIZER;
  o.device = g_device;
  return o;
}

static void* device_copy_of(const void* host, size_t bytes) {
  void* d = NULL;
  assert_int_equal(cudaMalloc(&d, bytes ? bytes : 1), cudaSuccess);
  if (bytes) assert_int_equal(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

static void* device_allocator(size_t nbytes, int device, void* user_data) {
  (void)device;
  (void)user_data;
  void* d = NULL;
  return cudaMalloc(&d, nbytes ? nbytes : 1) == cudaSuccess ? d : NULL;
}

static void every_op_dtype_and_size(void** state) {
  (void)state;
  const int rank = hvd_rank(), L = hvd_local_size();
  const int64_t counts[] = {0, 1, L > 1 ? L - 1 : 2, 7, 1001, 400000};
  const hvd_reduce_op_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};
  enum { MAXC = NUM_DTYPES * 5 * 6 };
  void* bufs[MAXC];
  hvd_handle_t handles[MAXC];
  hvd_dtype_t dts[MAXC];
  hvd_reduce_op_t rops[MAXC];
  int64_t ns[MAXC];
  int c = 0;
  const hvd_op_options_t opts = device_options();
  for (int t = 0; t < NUM_DTYPES; ++t)
    for (int o = 0; o < 5; ++o)
      for (int k = 0; k < 6; ++k) {
        hvd_dtype_t d = kAllDtypes[t];
        hvd_reduce_op_t op = ops[o];
        if (d == HVD_BOOL && op == HVD_OP_AVERAGE) continue;
        if (k == 5 && d != HVD_FLOAT32 && d != HVD_INT32) continue;
        int64_t n = counts[k];
        size_t bytes = (size_t)n * tu_dtype_size(d);
        void* host = tu_alloc(bytes);
        for (int64_t i = 0; i < n; ++i) tu_set(host, d, i, tu_hier_input(rank, i, op));
        void* buf = device_copy_of(host, bytes);
        free(host);
        char name[48];
        snprintf(name, sizeof name, "gh.%d.%d.%d", (int)d, (int)op, k);
        assert_hvd_ok(hvd_allreduce_async(buf, buf, n, d, op, name, &opts, &handles[c]));
        bufs[c] = buf;
        dts[c] = d;
        rops[c] = op;
        ns[c] = n;
        ++c;
      }
  for (int j = 0; j < c; ++j) {
    assert_hvd_ok(hvd_wait(handles[j]));
    size_t bytes = (size_t)ns[j] * tu_dtype_size(dts[j]);
    void* got = tu_alloc(bytes);
    if (bytes) assert_int_equal(cudaMemcpy(got, bufs[j], bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int64_t i = 0; i < ns[j]; ++i) {
      double want = tu_hier_expected(i, dts[j], rops[j]);
      double g = tu_get(got, dts[j], i);
      int ok = tu_close(g, want, dts[j]) ||
               (rops[j] == HVD_OP_AVERAGE && !tu_is_float(dts[j]) && fabs(g - want) < 1);
      if (!ok)
        fail_msg("dtype %d op %d n %lld [%lld]: %g != %g", (int)dts[j], (int)rops[j],
                 (long long)ns[j], (long long)i, g, want);
    }
    free(got);
    cudaFree(bufs[j]);
  }
}

static void counters_show_the_cross_node_traffic(void** state) {
  (void)state;
  const int size = hvd_size(), L = hvd_local_size(), C = hvd_cross_size();
  hvd_counters_t before = {.struct_size = sizeof(hvd_counters_t)}, after = before;
  const int64_t n = 1 << 20; /* 4 MiB of float32: above the fusion threshold */
  float* host = tu_alloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; ++i) host[i] = 1;
  float* buf = device_copy_of(host, sizeof(float) * (size_t)n);
  const hvd_op_options_t opts = device_options();
  hvd_handle_t h;
  assert_hvd_ok(hvd_get_counters(&before));
  assert_hvd_ok(hvd_allreduce_async(buf, buf, n, HVD_FLOAT32, HVD_OP_SUM, "traffic", &opts, &h));
  assert_hvd_ok(hvd_wait(h));
  assert_hvd_ok(hvd_get_counters(&after));
  assert_int_equal(cudaMemcpy(host, buf, sizeof(float) * (size_t)n, cudaMemcpyDeviceToHost), cudaSuccess);
  assert_true(host[0] == (float)size && host[n - 1] == (float)size);
  free(host);
  cudaFree(buf);
  const double bytes = 4.0 * (double)n;
  uint64_t cross = after.cross_bytes - before.cross_bytes;
  uint64_t global = after.global_bytes - before.global_bytes;
  /* Node count and evenness, from host allreduces (flat or not, they are exact). */
  float f = hvd_local_rank() == 0 ? 1.0f : 0.0f;
  assert_hvd_ok(hvd_allreduce(&f, &f, 1, HVD_FLOAT32, HVD_OP_SUM, "nodes"));
  const int nodes = (int)f;
  int32_t ls[2] = {L, -L};
  assert_hvd_ok(hvd_allreduce(ls, ls, 2, HVD_INT32, HVD_OP_MAX, "even"));
  const int even = ls[0] == -ls[1], max_local = ls[0];
  if (nodes == 1 || max_local == 1) {
    assert_int_equal(cross, 0);
    return;
  }
  assert_int_equal(global, 0);
  if (even) {
    double want = 2.0 * (C - 1) / C * (bytes / L);
    if (fabs((double)cross - want) > 16 * 1024)
      fail_msg("cross bytes %llu, expected ~%g", (unsigned long long)cross, want);
  } else if (hvd_local_rank() != 0) {
    assert_int_equal(cross, 0); /* only node leaders cross nodes */
  }
}

static void allgather_uneven_rows(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  /* Rank r contributes (r % 3) rows of 4 int32 (rank 0: none), then a large one. */
  for (int big = 0; big < 2; ++big) {
    const int64_t row = big ? 100000 : 4;
    int64_t shape[2] = {rank % 3, row};
    size_t bytes = (size_t)(shape[0] * row) * 4;
    int32_t* mine = tu_alloc(bytes);
    for (int64_t i = 0; i < shape[0] * row; ++i) mine[i] = rank * 1000 + (int32_t)(i % 1000);
    void* send = device_copy_of(mine, bytes);
    free(mine);
    hvd_op_options_t opts = device_options();
    opts.allocator = device_allocator;
    void* out = NULL;
    int64_t dim0 = 0;
    int64_t per_rank[64];
    assert_true(size <= 64);
    char name[32];
    snprintf(name, sizeof name, "gather.%d", big);
    assert_hvd_ok(hvd_allgather(send, 2, shape, HVD_INT32, &out, &dim0, per_rank, name, &opts));
    int64_t want_rows = 0;
    for (int q = 0; q < size; ++q) {
      assert_int_equal(per_rank[q], q % 3);
      want_rows += q % 3;
    }
    assert_int_equal(dim0, want_rows);
    int32_t* got = tu_alloc((size_t)(want_rows * row) * 4);
    if (want_rows)
      assert_int_equal(cudaMemcpy(got, out, (size_t)(want_rows * row) * 4, cudaMemcpyDeviceToHost),
                       cudaSuccess);
    int64_t at = 0;
    for (int q = 0; q < size; ++q)
      for (int64_t i = 0; i < (q % 3) * row; ++i, ++at)
        if (got[at] != q * 1000 + (int32_t)(i % 1000))
          fail_msg("allgather: element %lld from rank %d is %d", (long long)i, q, got[at]);
    free(got);
    cudaFree(out);
    cudaFree(send);
  }
}

int main(int argc, char** argv) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_op_dtype_and_size),
      cmocka_unit_test(counters_show_the_cross_node_traffic),
      cmocka_unit_test(allgather_uneven_rows),
  };
  return gpu_runtime_main(argc, argv, "gpu-hier-runtime", tests, sizeof tests / sizeof tests[0]);
}
