/* Large in-place allreduces that lie back to back in memory on every rank (a flat
 * gradient buffer pushed a tensor at a time) are fused and reduced where they lie, from
 * the round after every rank saw them so (adapt/layout_watch.h, HVD_FUSE_LARGE=auto);
 * the counters' back_to_back says so, alike on every rank. Every element is checked in
 * every layout, the rounds where the ranks' layouts change included (a prediction that
 * no longer holds costs copies, never a wrong result). The run's environment makes
 * tensors of 8 KiB "large" and the calls 16 KiB, so a step's buffer goes in several
 * pieces that start and end inside tensors.
 * Usage: test_back_to_back auto|never */
#include <mpi.h>

#include "test_util.h"

enum { kTensors = 10, kLarge = 5, kSteps = 3 };

static int expect_watch = 1; /* auto: the layout is watched */

/* Large tensors (2500..6000 elements) between small ones (38..46). */
static int64_t count_of(int t) { return t % 2 == 1 ? 37 + t : 2500 + (t * 977) % 3500; }

static int64_t total_count(void) {
  int64_t total = 0;
  for (int t = 0; t < kTensors; ++t) total += count_of(t);
  return total;
}

/* The counters' word on every rank: 1 if all say back to back, 0 if none, -1 if they
 * disagree (a defect: the word is agreed). */
static int agreed_back_to_back(void) {
  int mine = (int)tu_counters().back_to_back, lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi ? lo : -1;
}

static void expect_back_to_back(int want, const char* when) {
  const int got = agreed_back_to_back();
  if (!expect_watch) want = 0;
  if (got != want) fail_msg("%s: back_to_back %d on the ranks, want %d", when, got, want);
}

/* One flat buffer of the step's tensors in place (apart: each in its own allocation). */
struct Layout {
  void* tensors[kTensors];
  void* own[kTensors];
  int owned;
};

static void lay_out(struct Layout* l, hvd_dtype_t dtype, int apart) {
  const size_t esize = tu_dtype_size(dtype);
  l->owned = 0;
  if (apart) {
    for (int t = 0; t < kTensors; ++t)
      l->tensors[t] = l->own[l->owned++] = tu_alloc((size_t)count_of(t) * esize);
    return;
  }
  unsigned char* flat = tu_alloc((size_t)total_count() * esize);
  l->own[l->owned++] = flat;
  int64_t at = 0;
  for (int t = 0; t < kTensors; ++t) {
    l->tensors[t] = flat + at * (int64_t)esize;
    at += count_of(t);
  }
}

static void release(struct Layout* l) {
  for (int k = 0; k < l->owned; ++k) free(l->own[k]);
}

static void steps(const struct Layout* l, hvd_dtype_t dtype, hvd_reduce_op_t op,
                  const char* prefix, int n) {
  for (int s = 0; s < n; ++s)
    tu_scaled_allreduce_step(kTensors, l->tensors, l->tensors, count_of, dtype, op, prefix);
}

/* Every dtype, sums and averages with prescale and postscale: right from the first
 * step (negotiated by name, then cached, then fused where they lie). */
static void flat_buffers_reduce_right(void** state) {
  (void)state;
  const hvd_dtype_t dtypes[] = {HVD_FLOAT32, HVD_FLOAT16, HVD_BFLOAT16, HVD_INT32, HVD_FLOAT64};
  const hvd_reduce_op_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE};
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; ++d)
    for (int o = 0; o < 2; ++o) {
      struct Layout l;
      lay_out(&l, dtypes[d], 0);
      char prefix[64];
      snprintf(prefix, sizeof prefix, "b2b.flat.%zu.%d", d, o);
      steps(&l, dtypes[d], ops[o], prefix, kSteps);
      release(&l);
    }
  expect_back_to_back(1, "flat buffers on every rank");
}

/* Fused, the large tensors share collectives: fewer than one each a step. */
static void flat_buffers_share_collectives(void** state) {
  (void)state;
  struct Layout l;
  lay_out(&l, HVD_FLOAT32, 0);
  steps(&l, HVD_FLOAT32, HVD_OP_SUM, "b2b.count", 2);
  const uint64_t before = tu_collectives();
  steps(&l, HVD_FLOAT32, HVD_OP_SUM, "b2b.count", 4);
  const uint64_t ran = tu_collectives() - before;
  if (expect_watch && ran >= 4 * kLarge)
    fail_msg("%llu collectives in four steps of %d large tensors back to back: none fused",
             (unsigned long long)ran, kLarge);
  if (!expect_watch && ran < 4 * kLarge)
    fail_msg("HVD_FUSE_LARGE=never: %llu collectives in four steps of %d large tensors",
             (unsigned long long)ran, kLarge);
  release(&l);
}

/* One rank keeps its tensors apart: the rounds the others' prediction still held reduce
 * right (that rank copies through the fusion buffer), and then no rank fuses them; back
 * in one buffer, every rank fuses again. */
static void one_rank_apart(void** state) {
  (void)state;
  const int last = hvd_rank() == hvd_size() - 1;
  struct Layout flat, mixed;
  lay_out(&flat, HVD_FLOAT32, 0);
  lay_out(&mixed, HVD_FLOAT32, last);
  steps(&flat, HVD_FLOAT32, HVD_OP_AVERAGE, "b2b.apart", kSteps);
  expect_back_to_back(1, "before the change");
  steps(&mixed, HVD_FLOAT32, HVD_OP_AVERAGE, "b2b.apart", kSteps);
  if (hvd_size() > 1) expect_back_to_back(0, "one rank's tensors apart");
  steps(&flat, HVD_FLOAT32, HVD_OP_AVERAGE, "b2b.apart", kSteps);
  expect_back_to_back(1, "every rank's tensors back in one buffer");
  release(&flat);
  release(&mixed);
}

/* Tensors of two dtypes pushed in turns, each dtype back to back in a buffer of its
 * own (mixed precision): each fused stream lies back to back. */
static void two_streams_in_turns(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size();
  struct Layout a, b;
  lay_out(&a, HVD_FLOAT32, 0);
  lay_out(&b, HVD_FLOAT64, 0);
  hvd_op_options_t opts;
  assert_hvd_ok(hvd_op_options_init(&opts));
  opts.prescale_factor = 2.0;
  opts.postscale_factor = 3.0;
  for (int step = 0; step < kSteps + 1; ++step) {
    hvd_handle_t h[2 * kTensors];
    for (int t = 0; t < kTensors; ++t) {
      for (int64_t i = 0; i < count_of(t); ++i) {
        tu_set(a.tensors[t], HVD_FLOAT32, i, tu_scaled_input(rank, t, i));
        tu_set(b.tensors[t], HVD_FLOAT64, i, tu_scaled_input(rank, t, i));
      }
      char name[64];
      snprintf(name, sizeof name, "b2b.turns.f32.%d", t);
      assert_hvd_ok(hvd_allreduce_async(a.tensors[t], a.tensors[t], count_of(t), HVD_FLOAT32,
                                        HVD_OP_SUM, name, &opts, &h[2 * t]));
      snprintf(name, sizeof name, "b2b.turns.f64.%d", t);
      assert_hvd_ok(hvd_allreduce_async(b.tensors[t], b.tensors[t], count_of(t), HVD_FLOAT64,
                                        HVD_OP_SUM, name, &opts, &h[2 * t + 1]));
    }
    for (int k = 0; k < 2 * kTensors; ++k) assert_hvd_ok(hvd_wait(h[k]));
    for (int t = 0; t < kTensors; ++t)
      for (int64_t i = 0; i < count_of(t); ++i) {
        const double want = tu_scaled_expected(size, t, i, HVD_OP_SUM, HVD_FLOAT32);
        if (tu_get(a.tensors[t], HVD_FLOAT32, i) != want || tu_get(b.tensors[t], HVD_FLOAT64, i) != want)
          fail_msg("step %d tensor %d element %lld: %g and %g, want %g", step, t, (long long)i,
                   tu_get(a.tensors[t], HVD_FLOAT32, i), tu_get(b.tensors[t], HVD_FLOAT64, i), want);
      }
  }
  expect_back_to_back(1, "two dtypes in turns, each in its own buffer");
  release(&a);
  release(&b);
}

/* Within one node a fused flat buffer goes in the allreduce call size with a short last
 * piece: nothing padded, so each step sends exactly its bytes (across nodes the pieces
 * are kept one size; unit-negotiation). Two tensors of 1.25 calls: an even cut would
 * make two calls of 0.625, so an equal-pieces cut would pad the second to a whole call. */
enum { kShortTail = 2560 }; /* float32 elements a tensor: 10 KiB, above the large size */
static int64_t short_tail_count(int t) {
  (void)t;
  return kShortTail;
}

static void one_node_pads_no_piece(void** state) {
  (void)state;
  const int n = hvd_size();
  float* flat = tu_alloc(2 * kShortTail * sizeof(float));
  void* tensors[2] = {flat, flat + kShortTail};
  uint64_t bytes_before = 0, collectives_before = 0;
  for (int step = 0; step < kSteps + 2; ++step) {
    if (step == kSteps) {
      expect_back_to_back(1, "two tensors of a flat buffer");
      bytes_before = tu_counters().global_bytes;
      collectives_before = tu_collectives();
    }
    tu_scaled_allreduce_step(2, tensors, tensors, short_tail_count, HVD_FLOAT32, HVD_OP_SUM,
                             "b2b.tail");
  }
  const uint64_t sent = tu_counters().global_bytes - bytes_before;
  const uint64_t ran = tu_collectives() - collectives_before;
  free(flat);
  if (!expect_watch || n == 1 || hvd_cross_size() > 1) return;
  char text[32];
  assert_hvd_ok(hvd_param_get("HVD_ALLREDUCE_CHUNK_BYTES", text, sizeof text));
  const double call = atof(text), operand = 2.0 * kShortTail * sizeof(float);
  if (ran != 2 || call >= operand) fail_msg("%llu collectives in two steps, call size %.0f: "
                                            "the test's sizes no longer fuse in two calls",
                                            (unsigned long long)ran, call);
  /* Two steps, two calls each (a whole one and the tail); a byte of slack per call for
   * the counters' truncation. Padded, the tail would count as a whole call. */
  const double want = 2 * 2.0 * (n - 1) / n * operand;
  if ((double)sent < want - 4 || (double)sent > want + 4)
    fail_msg("%llu bytes sent in two steps of %.0f bytes, want %.0f (more: a padded piece)",
             (unsigned long long)sent, operand, want);
}

/* Out of place, outputs back to back: the operand is not where the result goes, so
 * nothing is fused for it. */
static void out_of_place_is_not_back_to_back(void** state) {
  (void)state;
  struct Layout in, out;
  lay_out(&in, HVD_FLOAT32, 1);
  lay_out(&out, HVD_FLOAT32, 0);
  for (int s = 0; s < kSteps; ++s)
    tu_scaled_allreduce_step(kTensors, in.tensors, out.tensors, count_of, HVD_FLOAT32, HVD_OP_SUM,
                             "b2b.out");
  expect_back_to_back(0, "out of place");
  release(&in);
  release(&out);
}

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "auto") != 0 && strcmp(argv[1], "never") != 0)) {
    fprintf(stderr, "usage: test_back_to_back auto|never\n");
    return 2;
  }
  expect_watch = strcmp(argv[1], "auto") == 0;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(flat_buffers_reduce_right), cmocka_unit_test(flat_buffers_share_collectives),
      cmocka_unit_test(one_rank_apart), cmocka_unit_test(two_streams_in_turns),
      cmocka_unit_test(one_node_pads_no_piece), cmocka_unit_test(out_of_place_is_not_back_to_back)};
  const int failed = tu_run("back_to_back", tests, sizeof tests / sizeof tests[0], tu_group_init,
                            tu_group_shutdown);
  MPI_Finalize();
  return failed;
}
