/* Large tensors in fused batches (HVD_FUSE_LARGE): tensors of HVD_INPLACE_MIN_BYTES
 * and more join a batch whose pieces are reduced in the tensors' own memory where a
 * piece lies in one tensor, and copied where it straddles two. The ranks keep their
 * tensors differently (rank 0 in one flat buffer in place, rank 1 in separate
 * allocations, rank 2 out of place), so one piece is reduced in place on one rank,
 * copied into the output on another and through the fusion buffer on a third; small
 * tensors sit between the large ones; a tensor above the fusion threshold goes alone,
 * padded where the others fuse. The run's environment sets small pieces and a
 * small HVD_INPLACE_MIN_BYTES; the argument says what the run expects: "fused" (large
 * tensors share collectives) or "alone" (one collective each).
 * Usage: test_fuse_large fused|alone */
#include "test_util.h"

/* kSteps: the first negotiated, the second from the response cache. A third would
 * repeat the second: some rank's tensors here never lie back to back in place, so the
 * layout verdict (core/layout_watch.h) stays the same from round to round. */
enum { kTensors = 10, kSteps = 2, kLarge = 6 };

static int expect_fused = 1;

/* Elements of tensor t: large ones (several 4 KiB pieces of float32, odd sizes, so
 * pieces start and end inside tensors) between small ones. */
static int64_t count_of(int t) { return t % 3 == 1 ? 37 + t : 2500 + (t * 977) % 3500; }

static void layouts_reduce_right(void** state) {
  (void)state;
  const int rank = hvd_rank();
  const hvd_dtype_t dtypes[] = {HVD_FLOAT32, HVD_FLOAT16, HVD_INT32, HVD_FLOAT64};
  const hvd_reduce_op_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE};
  int64_t total = 0;
  for (int t = 0; t < kTensors; ++t) total += count_of(t);
  for (int d = 0; d < 4; ++d)
    for (int o = 0; o < 2; ++o) {
      const hvd_dtype_t dtype = dtypes[d];
      const size_t esize = tu_dtype_size(dtype);
      unsigned char* flat = tu_alloc((size_t)total * esize);
      void* sends[kTensors];
      void* recvs[kTensors];
      void* own[2 * kTensors]; /* allocations of this layout, freed at the end */
      int owned = 0;
      int64_t at = 0;
      for (int t = 0; t < kTensors; ++t) {
        const size_t bytes = (size_t)count_of(t) * esize;
        switch (rank % 3) {
          case 0: /* one flat buffer, in place; tensor 3 out of place */
            recvs[t] = sends[t] = flat + at * (int64_t)esize;
            if (t == 3) recvs[t] = own[owned++] = tu_alloc(bytes);
            break;
          case 1: /* separate allocations, in place; tensors 2 and 5 out of place */
            recvs[t] = sends[t] = own[owned++] = tu_alloc(bytes);
            if (t == 2 || t == 5) recvs[t] = own[owned++] = tu_alloc(bytes);
            break;
          default: /* out of place: inputs apart, outputs back to back */
            sends[t] = own[owned++] = tu_alloc(bytes);
            recvs[t] = flat + at * (int64_t)esize;
            break;
        }
        at += count_of(t);
      }
      for (int step = 0; step < kSteps; ++step) { /* the first negotiated, then cached */
        char prefix[64];
        snprintf(prefix, sizeof prefix, "fuse-large.%d.%d", d, o);
        tu_scaled_allreduce_step(kTensors, sends, recvs, count_of, dtypes[d], ops[o], prefix);
      }
      for (int k = 0; k < owned; ++k) free(own[k]);
      free(flat);
    }
}

/* Large tensors pushed together share collectives where the option says so, and take
 * one each where it does not. Every rank counts the same collectives. Alone, each
 * sends its exact bytes; fused, at least as much (across nodes a batch sends its short
 * last piece padded to the others' size). Each tensor in an allocation of its own:
 * tensors back to back in one buffer are fused under auto wherever they run
 * (test_back_to_back.c). */
static void large_tensors_fuse_as_configured(void** state) {
  (void)state;
  /* 20 KB: five pieces, above HVD_INPLACE_MIN_BYTES and above HVD_SPECULATIVE_BYTES
   * (a lone repeated allreduce riding its round is not counted as a collective) */
  const int64_t count = 5000;
  float* data[kLarge];
  for (int t = 0; t < kLarge; ++t) data[t] = tu_alloc((size_t)count * sizeof(float));
  uint64_t before = 0, bytes_before = 0;
  for (int step = 0; step < 4; ++step) {
    if (step == 1) { /* after the step that negotiates by name */
      before = tu_collectives();
      bytes_before = tu_counters().global_bytes;
    }
    hvd_handle_t h[kLarge];
    for (int t = 0; t < kLarge; ++t) {
      char name[64];
      snprintf(name, sizeof name, "fuse-large.count.%d", t);
      for (int64_t i = 0; i < count; ++i) data[t][i] = 1.0f;
      assert_hvd_ok(hvd_allreduce_async(data[t], data[t], count, HVD_FLOAT32, HVD_OP_SUM, name,
                                        NULL, &h[t]));
    }
    for (int t = 0; t < kLarge; ++t) assert_hvd_ok(hvd_wait(h[t]));
    for (int t = 0; t < kLarge; ++t)
      for (int64_t i = 0; i < count; ++i)
        if (data[t][i] != (float)hvd_size())
          fail_msg("tensor %d element %lld: %g", t, (long long)i, data[t][i]);
  }
  const uint64_t ran = tu_collectives() - before;
  const uint64_t sent = tu_counters().global_bytes - bytes_before;
  const uint64_t alone = 3 * kLarge;
  /* A ring allreduce sends 2 (n - 1) / n of the operand (the counters' model); each
   * MPI call's figure is truncated, hence a byte of slack per call. */
  const int n = hvd_size();
  char text[32];
  assert_hvd_ok(hvd_param_get("HVD_FUSION_PIECE_BYTES", text, sizeof text));
  const double piece = atof(text);
  const double operand = (double)(kLarge * count) * sizeof(float);
  const double want = 3 * 2.0 * (n - 1) / n * operand; /* fused: padding may add to it */
  const double slack = 3 * ceil(operand / piece) + (double)ran;
  /* The hierarchical allreduce counts its bytes as local and cross traffic. */
  assert_hvd_ok(hvd_param_get("HOROVOD_HIERARCHICAL_ALLREDUCE", text, sizeof text));
  if (n > 1 && strcmp(text, "1") != 0 && ((double)sent < want - slack || (!expect_fused && (double)sent > want + slack)))
    fail_msg("%llu bytes sent for three steps, want %s%.0f", (unsigned long long)sent,
             expect_fused ? "at least " : "", want);
  if (expect_fused && ran >= alone)
    fail_msg("%llu collectives for %llu large tensors: none fused", (unsigned long long)ran,
             (unsigned long long)alone);
  if (!expect_fused && ran != alone)
    fail_msg("%llu collectives for %llu large tensors, want one each", (unsigned long long)ran,
             (unsigned long long)alone);
  for (int t = 0; t < kLarge; ++t) free(data[t]);
}

/* Above HOROVOD_FUSION_THRESHOLD (65536 bytes in these runs, in every dtype here) a
 * tensor is reduced alone; where large tensors fuse, it goes in pieces of (nearly) one
 * size all the same: cut evenly (33000 float32 elements: 33 pieces of 1000 instead of 32
 * of 1024 and 232 over), or with its short last piece padded where an even cut would
 * make the pieces much smaller than HVD_FUSION_PIECE_BYTES (not at these sizes; see
 * unit-pieces). In place on even ranks, out of place on odd ones. */
enum { kUneven = 33000, kWholePieces = 36864 }; /* 4 KiB pieces and 232 elements over */
static int64_t above_threshold = kUneven;
static int64_t count_above_threshold(int t) {
  (void)t;
  return above_threshold;
}

static void reduce_above_threshold(hvd_dtype_t dtype, hvd_reduce_op_t op, const char* prefix) {
  const size_t bytes = (size_t)above_threshold * tu_dtype_size(dtype);
  void* send = tu_alloc(bytes);
  void* recv = hvd_rank() % 2 == 0 ? send : tu_alloc(bytes);
  for (int step = 0; step < kSteps; ++step)
    tu_scaled_allreduce_step(1, &send, &recv, count_above_threshold, dtype, op, prefix);
  if (recv != send) free(recv);
  free(send);
}

static void tensor_above_threshold_reduces_right(void** state) {
  (void)state;
  const hvd_dtype_t dtypes[] = {HVD_FLOAT32, HVD_FLOAT16, HVD_INT32, HVD_FLOAT64};
  const hvd_reduce_op_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE};
  const int64_t counts[] = {kUneven, kWholePieces};
  for (int c = 0; c < 2; ++c) {
    above_threshold = counts[c];
    for (int d = 0; d < 4; ++d)
      for (int o = 0; o < 2; ++o) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "fuse-large.above.%d.%d.%d", c, d, o);
        reduce_above_threshold(dtypes[d], ops[o], prefix);
      }
  }

  const int64_t count = kUneven;
  /* One collective a step; fused runs send a padded last piece whole. */
  float* data = tu_alloc((size_t)count * sizeof(float));
  uint64_t before = 0, bytes_before = 0;
  for (int step = 0; step < 3; ++step) {
    if (step == 1) {
      before = tu_collectives();
      bytes_before = tu_counters().global_bytes;
    }
    for (int64_t i = 0; i < count; ++i) data[i] = 1.0f;
    assert_hvd_ok(hvd_allreduce(data, data, count, HVD_FLOAT32, HVD_OP_SUM, "fuse-large.above.count"));
    for (int64_t i = 0; i < count; ++i)
      if (data[i] != (float)hvd_size()) fail_msg("element %lld: %g", (long long)i, data[i]);
  }
  const uint64_t ran = tu_collectives() - before;
  const uint64_t sent = tu_counters().global_bytes - bytes_before;
  if (ran != 2) fail_msg("%llu collectives for two steps of one tensor", (unsigned long long)ran);
  char text[32];
  assert_hvd_ok(hvd_param_get("HOROVOD_HIERARCHICAL_ALLREDUCE", text, sizeof text));
  const int n = hvd_size();
  if (n > 1 && strcmp(text, "1") != 0) {
    assert_hvd_ok(hvd_param_get("HVD_FUSION_PIECE_BYTES", text, sizeof text));
    const int64_t piece = atoll(text) / (int64_t)sizeof(float);
    const int64_t pieces = (count + piece - 1) / piece, even = (count + pieces - 1) / pieces;
    /* Pieces are kept one size (and a short last one padded) only across nodes. */
    const int padded = expect_fused && hvd_cross_size() > 1 && even * 8 < piece * 7;
    const int64_t reduced = padded ? pieces * piece : count;
    const double want = 2 * 2.0 * (n - 1) / n * (double)reduced * sizeof(float);
    const double calls = 2.0 * (double)pieces;
    if ((double)sent < want - calls || (double)sent > want + calls)
      fail_msg("%llu bytes sent for two steps, want %.0f (%s)", (unsigned long long)sent, want,
               padded ? "the last piece padded" : "exact");
  }
  free(data);
}

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "fused") != 0 && strcmp(argv[1], "alone") != 0)) {
    fprintf(stderr, "usage: test_fuse_large fused|alone\n");
    return 2;
  }
  expect_fused = strcmp(argv[1], "fused") == 0;
  const struct CMUnitTest tests[] = {cmocka_unit_test(layouts_reduce_right),
                                     cmocka_unit_test(large_tensors_fuse_as_configured),
                                     cmocka_unit_test(tensor_above_threshold_reduces_right)};
  return cmocka_run_group_tests_name("fuse_large", tests, tu_group_init, tu_group_shutdown);
}
