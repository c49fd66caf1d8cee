/* MIN and MAX of floats leave every rank with the same bytes, whatever the inputs:
 * NaN, -0.0 and +0.0, +-inf and ordinary numbers in every combination across the
 * ranks, for every float dtype, reduced alone and fused. The result is IEEE 754-2019
 * minimum/maximum (a NaN in gives NaN out, -0.0 below +0.0), and a NaN result is the
 * one canonical quiet NaN of the dtype, though each rank's NaN carries its own sign and
 * payload (one rank alone gets its operand back as it is). Each rank checks its result against the expected bytes and against rank
 * 0's, gathered over MPI. */
#include <mpi.h>

#include "test_util.h"

static const hvd_dtype_t kFloats[] = {HVD_FLOAT16, HVD_BFLOAT16, HVD_FLOAT32, HVD_FLOAT64};
#define NUM_FLOATS 4

/* The kinds of value each element may hold, and their order (NaN apart). */
enum { K_NAN, K_NEG_ZERO, K_POS_ZERO, K_POS_INF, K_NEG_INF, K_ONE_HALF, K_NEG_TWO_HALF, NUM_KINDS };
static const int kOrder[NUM_KINDS] = {-1, 2, 3, 5, 0, 4, 1};

/* The bits of a kind of value in a dtype; a NaN is this rank's own: its sign and
 * payload differ from rank to rank (rank -1: the canonical NaN). */
static uint64_t kind_bits(hvd_dtype_t d, int kind, int rank) {
  static const uint64_t bits[4][NUM_KINDS] = {
      {0x7e00, 0x8000, 0x0000, 0x7c00, 0xfc00, 0x3e00, 0xc100},
      {0x7fc0, 0x8000, 0x0000, 0x7f80, 0xff80, 0x3fc0, 0xc020},
      {0x7fc00000u, 0x80000000u, 0, 0x7f800000u, 0xff800000u, 0x3fc00000u, 0xc0200000u},
      {0x7ff8000000000000ull, 0x8000000000000000ull, 0, 0x7ff0000000000000ull,
       0xfff0000000000000ull, 0x3ff8000000000000ull, 0xc004000000000000ull}};
  const int t = d == HVD_FLOAT16 ? 0 : d == HVD_BFLOAT16 ? 1 : d == HVD_FLOAT32 ? 2 : 3;
  uint64_t b = bits[t][kind];
  if (kind == K_NAN && rank >= 0) {
    const uint64_t sign = tu_dtype_size(d) == 2 ? 0x8000 : tu_dtype_size(d) == 4 ? 0x80000000u
                                                                                 : 0x8000000000000000ull;
    b |= (uint64_t)(rank + 1) | (rank % 2 ? sign : 0);
  }
  return b;
}

static uint64_t canonical_nan(hvd_dtype_t d) { return kind_bits(d, K_NAN, -1); }

/* Rank r's kind at element i: digit r (base NUM_KINDS) of i for ranks 0-2, so that
 * every combination over three ranks occurs; rank 3 repeats rank 0's shifted. */
static int kind_at(int rank, int64_t i) {
  if (rank >= 3) return (int)((i + 3) % NUM_KINDS);
  int64_t x = i;
  for (int k = 0; k < rank; ++k) x /= NUM_KINDS;
  return (int)(x % NUM_KINDS);
}

static int64_t element_count(int size) {
  int64_t n = 1;
  for (int k = 0; k < size && k < 3; ++k) n *= NUM_KINDS;
  return n;
}

static void put_bits(void* buf, hvd_dtype_t d, int64_t i, uint64_t b) {
  switch (tu_dtype_size(d)) {
    case 2: ((uint16_t*)buf)[i] = (uint16_t)b; break;
    case 4: ((uint32_t*)buf)[i] = (uint32_t)b; break;
    default: ((uint64_t*)buf)[i] = b; break;
  }
}

static uint64_t get_bits(const void* buf, hvd_dtype_t d, int64_t i) {
  switch (tu_dtype_size(d)) {
    case 2: return ((const uint16_t*)buf)[i];
    case 4: return ((const uint32_t*)buf)[i];
    default: return ((const uint64_t*)buf)[i];
  }
}

static uint64_t expected_bits(hvd_dtype_t d, hvd_reduce_op_t op, int64_t i) {
  /* A set of one rank reduces nothing: the operand comes back as it is. */
  if (hvd_size() == 1) return kind_bits(d, kind_at(0, i), 0);
  int best = -1;
  for (int r = 0; r < hvd_size(); ++r) {
    const int k = kind_at(r, i);
    if (k == K_NAN) return canonical_nan(d);
    if (best < 0 || (op == HVD_OP_MIN ? kOrder[k] < kOrder[best] : kOrder[k] > kOrder[best])) best = k;
  }
  return kind_bits(d, best, 0);
}

static void fill(void* buf, hvd_dtype_t d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) put_bits(buf, d, i, kind_bits(d, kind_at(hvd_rank(), i), hvd_rank()));
}

/* The result's bits as expected, and the same on every rank. */
static void check(const char* what, const void* buf, hvd_dtype_t d, hvd_reduce_op_t op, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t got = get_bits(buf, d, i), want = expected_bits(d, op, i);
    if (got != want)
      fail_msg("%s: %s %s element %lld is 0x%llx, want 0x%llx", what, d == HVD_FLOAT16 ? "float16"
               : d == HVD_BFLOAT16 ? "bfloat16" : d == HVD_FLOAT32 ? "float32" : "float64",
               op == HVD_OP_MIN ? "MIN" : "MAX", (long long)i, (unsigned long long)got,
               (unsigned long long)want);
  }
  const size_t bytes = (size_t)n * tu_dtype_size(d);
  unsigned char* all = tu_alloc(bytes * (size_t)hvd_size());
  assert_int_equal(MPI_Allgather(buf, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD),
                   MPI_SUCCESS);
  for (int r = 1; r < hvd_size(); ++r)
    if (memcmp(all, all + bytes * (size_t)r, bytes) != 0)
      fail_msg("%s: rank %d's result differs from rank 0's", what, r);
  free(all);
}

static const hvd_reduce_op_t kOps[] = {HVD_OP_MIN, HVD_OP_MAX};

/* Each tensor reduced on its own, in place and out of place. */
static void minmax_alone(void** state) {
  (void)state;
  const int64_t n = element_count(hvd_size());
  for (int t = 0; t < NUM_FLOATS; ++t) {
    const hvd_dtype_t d = kFloats[t];
    for (int o = 0; o < 2; ++o) {
      void* in = tu_alloc((size_t)n * 8);
      void* out = tu_alloc((size_t)n * 8);
      fill(in, d, n);
      assert_hvd_ok(hvd_allreduce(in, out, n, d, kOps[o], NULL));
      check("alone, out of place", out, d, kOps[o], n);
      assert_hvd_ok(hvd_allreduce(in, in, n, d, kOps[o], NULL));
      check("alone, in place", in, d, kOps[o], n);
      free(in);
      free(out);
    }
  }
}

/* Several tensors of each dtype and op in flight together: fused into one batch. */
static void minmax_fused(void** state) {
  (void)state;
  enum { TENSORS = 3 };
  const int64_t n = element_count(hvd_size());
  for (int t = 0; t < NUM_FLOATS; ++t) {
    const hvd_dtype_t d = kFloats[t];
    for (int o = 0; o < 2; ++o) {
      void* bufs[TENSORS];
      hvd_handle_t handles[TENSORS];
      for (int k = 0; k < TENSORS; ++k) {
        char name[64];
        snprintf(name, sizeof name, "minmax.%d.%d.%d", t, o, k);
        bufs[k] = tu_alloc((size_t)n * 8);
        fill(bufs[k], d, n);
        assert_hvd_ok(hvd_allreduce_async(bufs[k], bufs[k], n, d, kOps[o], name, NULL, &handles[k]));
      }
      for (int k = 0; k < TENSORS; ++k) {
        assert_hvd_ok(hvd_wait(handles[k]));
        check("fused", bufs[k], d, kOps[o], n);
        free(bufs[k]);
      }
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(minmax_alone),
      cmocka_unit_test(minmax_fused),
  };
  return cmocka_run_group_tests_name("minmax_nan", tests, tu_group_init, tu_group_shutdown);
}
