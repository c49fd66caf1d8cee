/* HVD_OP_ADASUM against a straightforward reference computed here: the pairwise
 * combination (1 - a.b/(2|a|^2)) a + (1 - a.b/(2|b|^2)) b over the binary tree of
 * ranks in order, in double, from the same (rounded) inputs. Every rank can compute
 * every rank's input, so each checks the whole result on its own.
 * Cases: orthogonal tensors add (exactly), parallel tensors average, mixed ones match
 * the reference; every float dtype; odd sizes, fused batches (async, grouped), a lone
 * tensor in and out of place, one larger than the fusion threshold; prescale and
 * postscale; a rank contributing zeros (a zero tensor, a joined rank); process sets of
 * power-of-two size inside a job that is not; and the refusals, alike on every rank:
 * integer dtypes, a set whose size is not a power of two, reducescatter. */
#include "adasum_reference.h"

static const hvd_dtype_t kFloatDtypes[] = {HVD_FLOAT32, HVD_FLOAT64, HVD_FLOAT16, HVD_BFLOAT16};
enum { kNumFloat = 4, kTensors = 10 };

static int64_t count_of(int t) {
  static const int64_t counts[kTensors] = {1, 2, 3, 7, 33, 301, 1000, 4097, 5, 0};
  return counts[t];
}

static int* world_members(void) {
  int* m = tu_alloc((size_t)hvd_size() * sizeof(int));
  for (int q = 0; q < hvd_size(); ++q) m[q] = q;
  return m;
}

/* Many tensors of odd sizes submitted together (they fuse), each with its own
 * coefficients, against the reference, in every float dtype. */
static void fused_batch_matches_reference(void** state) {
  (void)state;
  if (!is_power_of_two(hvd_size())) skip();
  int* members = world_members();
  for (int di = 0; di < kNumFloat; ++di) {
    const hvd_dtype_t d = kFloatDtypes[di];
    void* bufs[kTensors];
    hvd_handle_t handles[kTensors];
    for (int t = 0; t < kTensors; ++t) {
      bufs[t] = tu_alloc((size_t)count_of(t) * tu_dtype_size(d));
      for (int64_t i = 0; i < count_of(t); ++i) tu_set(bufs[t], d, i, mixed_input(hvd_rank(), t, i));
    }
    for (int t = 0; t < kTensors; ++t) {
      char name[64];
      snprintf(name, sizeof name, "adasum.fused.%d.%d", di, t);
      assert_hvd_ok(hvd_allreduce_async(bufs[t], bufs[t], count_of(t), d, HVD_OP_ADASUM, name, NULL,
                                        &handles[t]));
    }
    for (int t = 0; t < kTensors; ++t) assert_hvd_ok(hvd_wait(handles[t]));
    for (int t = 0; t < kTensors; ++t) {
      double* want = tu_alloc((size_t)count_of(t) * sizeof(double));
      reference(members, 0, hvd_size(), t, count_of(t), d, mixed_input, want);
      assert_matches(bufs[t], want, count_of(t), d, 1.0, "fused batch", t);
      free(want);
      free(bufs[t]);
    }
  }
  free(members);
}

/* The same through hvd_grouped_allreduce (one unit), out of place, with prescale and
 * postscale: Adasum(p a, p b) = p Adasum(a, b), then the postscale. */
static void grouped_out_of_place_scaled(void** state) {
  (void)state;
  if (!is_power_of_two(hvd_size())) skip();
  int* members = world_members();
  const hvd_dtype_t d = HVD_FLOAT64;
  const void* sends[kTensors];
  void* recvs[kTensors];
  int64_t counts[kTensors];
  for (int t = 0; t < kTensors; ++t) {
    counts[t] = count_of(t);
    double* s = tu_alloc((size_t)counts[t] * sizeof(double));
    for (int64_t i = 0; i < counts[t]; ++i) s[i] = mixed_input(hvd_rank(), t, i);
    sends[t] = s;
    recvs[t] = tu_alloc((size_t)counts[t] * sizeof(double));
  }
  hvd_op_options_t opts;
  assert_hvd_ok(hvd_op_options_init(&opts));
  opts.prescale_factor = 2.0;
  opts.postscale_factor = 0.125;
  hvd_handle_t h;
  assert_hvd_ok(hvd_grouped_allreduce_async(kTensors, sends, recvs, counts, d, HVD_OP_ADASUM,
                                            "adasum.grouped", &opts, &h));
  assert_hvd_ok(hvd_wait(h));
  for (int t = 0; t < kTensors; ++t) {
    double* want = tu_alloc((size_t)counts[t] * sizeof(double));
    reference(members, 0, hvd_size(), t, counts[t], d, mixed_input, want);
    assert_matches(recvs[t], want, counts[t], d, 0.25, "grouped, scaled", t);
    for (int64_t i = 0; i < counts[t]; ++i)
      assert_true(((const double*)sends[t])[i] == mixed_input(hvd_rank(), t, i)); /* input intact */
    free(want);
    free((void*)sends[t]);
    free(recvs[t]);
  }
  free(members);
}

/* Tensors with disjoint supports are orthogonal: every dot product is exactly 0, every
 * coefficient exactly 1, and the result is the plain sum, bit for bit, in every
 * dtype. */
static void orthogonal_tensors_add(void** state) {
  (void)state;
  if (!is_power_of_two(hvd_size())) skip();
  const int size = hvd_size(), rank = hvd_rank();
  const int64_t n = 8 * size + 3;
  for (int di = 0; di < kNumFloat; ++di) {
    const hvd_dtype_t d = kFloatDtypes[di];
    void* buf = tu_alloc((size_t)n * tu_dtype_size(d));
    for (int64_t i = 0; i < n; ++i) tu_set(buf, d, i, i % size == rank ? (double)(i % 7 + 1) : 0.0);
    assert_hvd_ok(hvd_allreduce(buf, buf, n, d, HVD_OP_ADASUM, "adasum.orthogonal"));
    for (int64_t i = 0; i < n; ++i)
      if (tu_get(buf, d, i) != (double)(i % 7 + 1))
        fail_msg("dtype %d element %lld: %g, want %g", (int)d, (long long)i, tu_get(buf, d, i),
                 (double)(i % 7 + 1));
    free(buf);
  }
}

/* Tensors that are multiples of one vector average: Adasum(c1 v, c2 v) =
 * (c1 + c2)/2 v at each level, so the tree gives the mean of the c's. */
static void parallel_tensors_average(void** state) {
  (void)state;
  if (!is_power_of_two(hvd_size())) skip();
  const int size = hvd_size(), rank = hvd_rank();
  const int64_t n = 1000;
  double mean = 0;
  for (int q = 0; q < size; ++q) mean += (q + 1.0) / size;
  for (int di = 0; di < kNumFloat; ++di) {
    const hvd_dtype_t d = kFloatDtypes[di];
    void* buf = tu_alloc((size_t)n * tu_dtype_size(d));
    double* want = tu_alloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; ++i) {
      const double v = 0.5 + (double)(i % 5) / 4.0; /* exact in every dtype */
      tu_set(buf, d, i, (rank + 1.0) * v);
      want[i] = mean * v;
    }
    assert_hvd_ok(hvd_allreduce(buf, buf, n, d, HVD_OP_ADASUM, "adasum.parallel"));
    assert_matches(buf, want, n, d, 1.0, "parallel", 0);
    free(buf);
    free(want);
  }
}

/* A lone tensor above the fusion threshold (1 MiB in this suite), out of place: its
 * halves at each distance are large and uneven (an odd count). */
static void large_out_of_place(void** state) {
  (void)state;
  if (!is_power_of_two(hvd_size())) skip();
  int* members = world_members();
  const int64_t n = 300001;
  const hvd_dtype_t d = HVD_FLOAT32;
  float* send = tu_alloc((size_t)n * sizeof(float));
  float* recv = tu_alloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) send[i] = (float)mixed_input(hvd_rank(), 7, i);
  assert_hvd_ok(hvd_allreduce(send, recv, n, d, HVD_OP_ADASUM, "adasum.large"));
  double* want = tu_alloc((size_t)n * sizeof(double));
  reference(members, 0, hvd_size(), 7, n, d, mixed_input, want);
  assert_matches(recv, want, n, d, 1.0, "large", 7);
  free(send);
  free(recv);
  free(want);
  free(members);
}

/* A joined rank contributes zeros, which Adasum leaves out: the others' combination
 * is what the reference gives with that rank's tensor zero. */
static int g_joined_rank;
static double input_with_joined(int rank, int t, int64_t i) {
  return rank == g_joined_rank ? 0.0 : mixed_input(rank, t + 1, i);
}

static void joined_rank_is_left_out(void** state) {
  (void)state;
  if (!is_power_of_two(hvd_size()) || hvd_size() < 2) skip();
  g_joined_rank = hvd_size() - 1;
  const int64_t n = 301;
  int last = -1;
  if (hvd_rank() == g_joined_rank) {
    assert_hvd_ok(hvd_join(HVD_DEVICE_CPU, &last));
  } else {
    int* members = world_members();
    double* buf = tu_alloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; ++i) buf[i] = input_with_joined(hvd_rank(), 0, i);
    assert_hvd_ok(hvd_allreduce(buf, buf, n, HVD_FLOAT64, HVD_OP_ADASUM, "adasum.joined"));
    double* want = tu_alloc((size_t)n * sizeof(double));
    reference(members, 0, hvd_size(), 0, n, HVD_FLOAT64, input_with_joined, want);
    assert_matches(buf, want, n, HVD_FLOAT64, 1.0, "joined", 0);
    assert_hvd_ok(hvd_join(HVD_DEVICE_CPU, &last));
    free(buf);
    free(want);
    free(members);
  }
}

/* Ranks 0 and size-1 as a set of two (3 ranks: a job Adasum refuses, a set it takes). */
static void two_rank_process_set(void** state) {
  (void)state;
  const int size = hvd_size(), rank = hvd_rank();
  if (size < 3) skip();
  const int members[2] = {0, size - 1};
  int32_t id = -1;
  assert_hvd_ok(hvd_add_process_set(members, 2, &id));
  if (rank == members[0] || rank == members[1]) {
    const int64_t n = 33;
    float* buf = tu_alloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; ++i) buf[i] = (float)mixed_input(rank, 4, i);
    hvd_op_options_t opts;
    assert_hvd_ok(hvd_op_options_init(&opts));
    opts.process_set_id = id;
    hvd_handle_t h;
    assert_hvd_ok(hvd_allreduce_async(buf, buf, n, HVD_FLOAT32, HVD_OP_ADASUM, "adasum.set", &opts, &h));
    assert_hvd_ok(hvd_wait(h));
    double* want = tu_alloc((size_t)n * sizeof(double));
    reference(members, 0, 2, 4, n, HVD_FLOAT32, mixed_input, want);
    assert_matches(buf, want, n, HVD_FLOAT32, 1.0, "process set", 4);
    free(buf);
    free(want);
  }
  assert_hvd_ok(hvd_remove_process_set(id));
}

static void assert_mentions(const char* what) {
  if (!strstr(hvd_last_error(), what)) fail_msg("last error '%s' does not mention '%s'", hvd_last_error(), what);
}

/* Refused alike on every rank (nobody waits for anybody): integer dtypes, a set whose
 * size is not a power of two, reducescatter. */
static void refusals(void** state) {
  (void)state;
  int32_t ints[4] = {1, 2, 3, 4};
  assert_hvd_status(hvd_allreduce(ints, ints, 4, HVD_INT32, HVD_OP_ADASUM, "adasum.int"),
                    HVD_ERR_INVALID_ARGUMENT);
  assert_mentions("floating-point");
  float v[4] = {1, 2, 3, 4};
  if (!is_power_of_two(hvd_size())) {
    assert_hvd_status(hvd_allreduce(v, v, 4, HVD_FLOAT32, HVD_OP_ADASUM, "adasum.npot"), HVD_ERR_UNSUPPORTED);
    assert_mentions("power-of-two");
    assert_true(v[0] == 1 && v[3] == 4); /* untouched */
  }
  int64_t shape[1] = {4};
  assert_hvd_status(hvd_reducescatter(v, v, 1, shape, HVD_FLOAT32, HVD_OP_ADASUM, "adasum.rs", NULL),
                    HVD_ERR_UNSUPPORTED);
  assert_mentions("allreduce only");
  /* The runtime goes on. */
  assert_hvd_ok(hvd_allreduce(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, "adasum.after"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fused_batch_matches_reference), cmocka_unit_test(grouped_out_of_place_scaled),
      cmocka_unit_test(orthogonal_tensors_add),        cmocka_unit_test(parallel_tensors_average),
      cmocka_unit_test(large_out_of_place),            cmocka_unit_test(joined_rank_is_left_out),
      cmocka_unit_test(two_rank_process_set),          cmocka_unit_test(refusals),
  };
  return tu_run("adasum", tests, sizeof tests / sizeof tests[0], tu_group_init, tu_group_shutdown);
}
