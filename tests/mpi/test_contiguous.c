/* Fused allreduces of in-place tensors that lie back to back in memory (a framework's
 * flat gradient buffer) are reduced where they are, without the fusion buffer; the
 * ranks need not agree on the layout: here rank 0 keeps every tensor in one flat
 * buffer, rank 1 in separate allocations, rank 2 in a flat buffer with a gap in the
 * middle (two runs), and a member out of place breaks a run. Small fusion pieces
 * (HVD_FUSION_PIECE_BYTES) make pieces that start and end inside tensors and span
 * runs. Every dtype, SUM and AVERAGE, with prescale and postscale. */
#include "test_util.h"

enum { kTensors = 24, kSteps = 3 };

static int64_t count_of(int t) { return 1 + (t * 37) % 301; } /* odd sizes, 1..301 */

static void contiguous_layouts_reduce_right(void** state) {
  (void)state;
  const int rank = hvd_rank();
  const hvd_dtype_t dtypes[] = {HVD_FLOAT32, HVD_FLOAT64, HVD_FLOAT16, HVD_BFLOAT16, HVD_INT32};
  const hvd_reduce_op_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE};
  int64_t total = 0;
  for (int t = 0; t < kTensors; ++t) total += count_of(t);
  for (int d = 0; d < 5; ++d)
    for (int o = 0; o < 2; ++o) {
      const hvd_dtype_t dtype = dtypes[d];
      const size_t esize = tu_dtype_size(dtype);
      /* Room for a gap of 8 elements and one out-of-place output. */
      unsigned char* flat = tu_alloc((size_t)(total + 8 + 301) * esize);
      void* sends[kTensors];
      void* recvs[kTensors];
      int64_t at = 0;
      for (int t = 0; t < kTensors; ++t) {
        if (rank % 3 == 1) {
          recvs[t] = tu_alloc((size_t)count_of(t) * esize);
        } else {
          if (rank % 3 == 2 && t == kTensors / 2) at += 8; /* the gap */
          recvs[t] = flat + at * (int64_t)esize;
          at += count_of(t);
        }
        sends[t] = recvs[t];
      }
      /* Tensor 5 out of place on every rank: its output is elsewhere. */
      void* out_of_place = flat + (total + 8) * (int64_t)esize;
      recvs[5] = out_of_place;
      for (int step = 0; step < kSteps; ++step) { /* the first negotiated, then cached */
        char prefix[64];
        snprintf(prefix, sizeof prefix, "flat.%d.%d", d, o);
        tu_scaled_allreduce_step(kTensors, sends, recvs, count_of, dtypes[d], ops[o], prefix);
      }
      if (rank % 3 == 1) /* sends keeps tensor 5's own allocation */
        for (int t = 0; t < kTensors; ++t) free(sends[t]);
      free(flat);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(contiguous_layouts_reduce_right)};
  return cmocka_run_group_tests_name("contiguous", tests, tu_group_init, tu_group_shutdown);
}
