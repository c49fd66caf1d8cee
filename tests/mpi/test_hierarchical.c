/* Hierarchical allreduce (HOROVOD_HIERARCHICAL_ALLREDUCE=1) on several "nodes": every
 * reduce op and dtype, awkward sizes, a tensor above the fusion threshold, results
 * equal to the flat algorithm's, and the traffic counters showing where bytes went.
 * The same program runs with the variable unset as the flat reference. */
#include "test_util.h"

static int hierarchical(void) {
  const char* v = getenv("HOROVOD_HIERARCHICAL_ALLREDUCE");
  return v && strcmp(v, "1") == 0;
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
  for (int t = 0; t < NUM_DTYPES; ++t)
    for (int o = 0; o < 5; ++o)
      for (int k = 0; k < 6; ++k) {
        hvd_dtype_t d = kAllDtypes[t];
        hvd_reduce_op_t op = ops[o];
        if (d == HVD_BOOL && op == HVD_OP_AVERAGE) continue;
        if (k == 5 && d != HVD_FLOAT32 && d != HVD_INT32) continue;
        int64_t n = counts[k];
        void* buf = tu_alloc((size_t)n * tu_dtype_size(d));
        for (int64_t i = 0; i < n; ++i) tu_set(buf, d, i, tu_hier_input(rank, i, op));
        char name[48];
        snprintf(name, sizeof name, "h.%d.%d.%d", (int)d, (int)op, k);
        assert_hvd_ok(hvd_allreduce_async(buf, buf, n, d, op, name, NULL, &handles[c]));
        bufs[c] = buf;
        dts[c] = d;
        rops[c] = op;
        ns[c] = n;
        ++c;
      }
  for (int j = 0; j < c; ++j) {
    assert_hvd_ok(hvd_wait(handles[j]));
    for (int64_t i = 0; i < ns[j]; ++i) {
      double want = tu_hier_expected(i, dts[j], rops[j]);
      double got = tu_get(bufs[j], dts[j], i);
      /* Integer averages truncate. */
      int ok = tu_close(got, want, dts[j]) ||
               (rops[j] == HVD_OP_AVERAGE && !tu_is_float(dts[j]) && fabs(got - want) < 1);
      if (!ok)
        fail_msg("dtype %d op %d n %lld [%lld]: %g != %g", (int)dts[j], (int)rops[j],
                 (long long)ns[j], (long long)i, got, want);
    }
    free(bufs[j]);
  }
}

static void counters_show_the_cross_node_traffic(void** state) {
  (void)state;
  const int size = hvd_size(), L = hvd_local_size(), C = hvd_cross_size();
  hvd_counters_t before = {.struct_size = sizeof(hvd_counters_t)}, after = before;
  const int64_t n = 1 << 20; /* 4 MiB of float32: larger than the fusion threshold */
  float* buf = tu_alloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; ++i) buf[i] = 1;
  assert_hvd_ok(hvd_get_counters(&before));
  assert_hvd_ok(hvd_allreduce(buf, buf, n, HVD_FLOAT32, HVD_OP_SUM, "traffic"));
  assert_hvd_ok(hvd_get_counters(&after));
  assert_true(buf[n - 1] == (float)size);
  free(buf); /* before the early return of the flat and one-node cases */
  const double bytes = 4.0 * (double)n;
  uint64_t cross = after.cross_bytes - before.cross_bytes;
  uint64_t global = after.global_bytes - before.global_bytes;
  int nodes = 0;
  /* local rank 0 of every node: count the nodes */
  int leader = hvd_local_rank() == 0, leaders = leader;
  (void)leaders;
  float f = (float)leader;
  assert_hvd_ok(hvd_allreduce(&f, &f, 1, HVD_FLOAT32, HVD_OP_SUM, "nodes"));
  nodes = (int)f;
  int32_t ls[2] = {L, -L};
  assert_hvd_ok(hvd_allreduce(ls, ls, 2, HVD_INT32, HVD_OP_MAX, "even"));
  const int even = ls[0] == -ls[1], max_local = ls[0];
  if (!hierarchical() || nodes == 1 || max_local == 1) {
    assert_int_equal(cross, 0);
    assert_true(global >= (uint64_t)(2.0 * (size - 1) / size * bytes) - 8);
    return;
  }
  assert_int_equal(global, 0);
  if (even) {
    /* Each rank sends 2 (C-1)/C of its 1/L shard across nodes: 1/L of a flat
       allreduce's traffic over the same C-node ring. */
    double want = 2.0 * (C - 1) / C * (bytes / L);
    if (fabs((double)cross - want) > 16 * 1024) fail_msg("cross bytes %llu, expected ~%g", (unsigned long long)cross, want);
  } else if (hvd_local_rank() != 0) {
    assert_int_equal(cross, 0); /* only node leaders cross nodes */
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_op_dtype_and_size),
      cmocka_unit_test(counters_show_the_cross_node_traffic),
  };
  return cmocka_run_group_tests_name("hierarchical", tests, tu_group_init, tu_group_shutdown);
}
