/* Broadcast from every root, every dtype, async and blocking. */
#include "test_util.h"

static void every_root_and_dtype(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  const int64_t counts[] = {0, 1, 1000, 300000};
  enum { MAXC = 4 * NUM_DTYPES * 8 };
  void* bufs[MAXC];
  hvd_handle_t handles[MAXC];
  int roots[MAXC], n = 0;
  hvd_dtype_t dts[MAXC];
  int64_t cnts[MAXC];
  for (int root = 0; root < size && root < 8; ++root)
    for (int t = 0; t < NUM_DTYPES; ++t)
      for (int k = 0; k < 4; ++k) {
        if (k == 3 && t != 8) continue; /* one large float32 per root */
        hvd_dtype_t d = kAllDtypes[t];
        void* buf = tu_alloc((size_t)counts[k] * tu_dtype_size(d));
        for (int64_t i = 0; i < counts[k]; ++i) tu_set(buf, d, i, (double)((i + rank) % 2 + (d == HVD_BOOL ? 0 : rank)));
        char name[64];
        snprintf(name, sizeof name, "bcast.r%d.t%d.n%lld", root, (int)d, (long long)counts[k]);
        assert_hvd_ok(hvd_broadcast_async(buf, counts[k], d, root, name, NULL, &handles[n]));
        bufs[n] = buf;
        roots[n] = root;
        dts[n] = d;
        cnts[n] = counts[k];
        ++n;
      }
  for (int c = 0; c < n; ++c) {
    assert_hvd_ok(hvd_wait(handles[c]));
    for (int64_t i = 0; i < cnts[c]; ++i) {
      double want = (double)((i + roots[c]) % 2 + (dts[c] == HVD_BOOL ? 0 : roots[c]));
      if (dts[c] == HVD_BOOL) want = want != 0;
      double got = tu_get(bufs[c], dts[c], i);
      if (got != want) fail_msg("case %d root %d dtype %d [%lld]: %g != %g", c, roots[c], (int)dts[c], (long long)i, got, want);
    }
    free(bufs[c]);
  }
}

static void blocking_steps_with_cache(void** state) {
  (void)state;
  const int rank = hvd_rank();
  for (int step = 0; step < 10; ++step) {
    int64_t v[3] = {rank, step, -rank};
    assert_hvd_ok(hvd_broadcast(v, 3, HVD_INT64, step % hvd_size(), "weights"));
    assert_int_equal(v[0], step % hvd_size());
    assert_int_equal(v[1], step);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_root_and_dtype),
      cmocka_unit_test(blocking_steps_with_cache),
  };
  return cmocka_run_group_tests_name("broadcast", tests, tu_group_init, tu_group_shutdown);
}
