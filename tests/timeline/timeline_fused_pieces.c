/* A fused allreduce larger than the fusion piece (HVD_FUSION_PIECE_BYTES) while the
 * timeline records on rank 0 only: the traced rank must make the same MPI calls as
 * the others. It once reduced the traced batch in one call per MPI chunk instead of
 * one per piece, so rank 0 made fewer calls than its peers: the job hung in the next
 * collective (or reduced mismatched pieces). Run with HOROVOD_TIMELINE set. */
#include "hvd_check.h"

enum { kTensors = 3, kCount = 100 * 1000, kSteps = 3 }; /* 3 x 400 KB: 1.2 MB fused */

int main(void) {
  CHECK(hvd_init());
  const int rank = hvd_rank(), size = hvd_size();
  static float data[kTensors][kCount];
  for (int step = 0; step < kSteps; ++step) {
    for (int t = 0; t < kTensors; ++t)
      for (int i = 0; i < kCount; ++i) data[t][i] = (float)(rank + t + (i % 7));
    const void* sends[kTensors] = {data[0], data[1], data[2]};
    void* recvs[kTensors] = {data[0], data[1], data[2]};
    const int64_t counts[kTensors] = {kCount, kCount, kCount};
    CHECK(hvd_grouped_allreduce(kTensors, sends, recvs, counts, HVD_FLOAT32, HVD_OP_SUM,
                                "pieces", NULL));
    for (int t = 0; t < kTensors; ++t)
      for (int i = 0; i < kCount; ++i) {
        const float want = (float)(size * (size - 1) / 2 + size * (t + (i % 7)));
        if (data[t][i] != want) {
          fprintf(stderr, "rank %d step %d: tensor %d element %d is %g, want %g\n", rank, step,
                  t, i, data[t][i], want);
          return 1;
        }
      }
  }
  /* A collective after the fused ones: it hung when the traced rank was a call short. */
  CHECK(hvd_barrier(0));
  if (rank == 0) printf("ok: %d steps of %d fused tensors on %d ranks\n", kSteps, kTensors, size);
  CHECK(hvd_shutdown());
  return 0;
}
