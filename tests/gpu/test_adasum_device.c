/* HVD_OP_ADASUM of device tensors through the public API, against the reference of
 * tests/mpi/adasum_reference.h:
 *   HOROVOD_GPU_OPERATIONS=MPI (staged): combined over every rank, as host tensors;
 *   NCCL: summed within each node, combined across nodes, divided by the ranks per
 *   node (Horovod's GPU Adasum), which on one node is the plain average.
 * A fused batch of every float dtype with sizes 0, 1, odd, below and above the local
 * size (NCCL's equal shards leave a tail), prescale and postscale. Ranks must be laid
 * out node by node (Hydra's -hosts nodeA:2,nodeB:2). Exits 77 without a CUDA device
 * (NCCL: one per rank). */
#include "../mpi/adasum_reference.h"
#include "gpu_runtime_main.h"

/* Node n's input in NCCL mode: the sum of its ranks' inputs (node-major layout). */
static double node_input(int node, int t, int64_t i) {
  double s = 0;
  for (int q = node * hvd_local_size(); q < (node + 1) * hvd_local_size(); ++q) s += mixed_input(q, t, i);
  return s;
}

static void fused_device_batch(void** state) {
  (void)state;
  const int rank = hvd_rank(), size = hvd_size(), L = hvd_local_size();
  if (hvd_cross_rank() != rank / L) skip(); /* not node by node */
  const hvd_dtype_t dtypes[] = {HVD_FLOAT32, HVD_FLOAT64, HVD_FLOAT16, HVD_BFLOAT16};
  const int64_t counts[] = {0, 1, L + 1, 301, 4097};
  enum { kD = 4, kC = 5 };
  const int groups = nccl_mode() ? hvd_cross_size() : size;
  if (!is_power_of_two(groups)) skip();
  int* members = tu_alloc((size_t)groups * sizeof(int));
  for (int g = 0; g < groups; ++g) members[g] = g;
  hvd_op_options_t opts = HVD_OP_OPTIONS_INITIALIZER;
  opts.device = g_device;
  opts.prescale_factor = 0.5;
  opts.postscale_factor = 4.0;
  void* bufs[kD * kC];
  hvd_handle_t handles[kD * kC];
  for (int d = 0; d < kD; ++d)
    for (int c = 0; c < kC; ++c) {
      const size_t bytes = (size_t)counts[c] * tu_dtype_size(dtypes[d]);
      void* host = tu_alloc(bytes);
      for (int64_t i = 0; i < counts[c]; ++i) tu_set(host, dtypes[d], i, mixed_input(rank, c, i));
      void* dev = NULL;
      assert_int_equal(cudaMalloc(&dev, bytes ? bytes : 1), cudaSuccess);
      if (bytes) assert_int_equal(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
      free(host);
      char name[32];
      snprintf(name, sizeof name, "gpu.adasum.%d.%d", d, c);
      bufs[d * kC + c] = dev;
      assert_hvd_ok(hvd_allreduce_async(dev, dev, counts[c], dtypes[d], HVD_OP_ADASUM, name, &opts,
                                        &handles[d * kC + c]));
    }
  for (int d = 0; d < kD; ++d)
    for (int c = 0; c < kC; ++c) {
      assert_hvd_ok(hvd_wait(handles[d * kC + c]));
      const int64_t n = counts[c];
      const size_t bytes = (size_t)n * tu_dtype_size(dtypes[d]);
      void* got = tu_alloc(bytes);
      if (bytes) assert_int_equal(cudaMemcpy(got, bufs[d * kC + c], bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      double* want = tu_alloc((size_t)n * sizeof(double) + 1);
      /* Adasum is linear in a common factor: prescale 0.5, postscale 4 give 2x. NCCL
       * mode combines node sums (of 16-bit values rounded per rank; the reference sums
       * them in double) and divides by the ranks per node. */
      if (nccl_mode()) {
        reference(members, 0, groups, c, n, HVD_FLOAT64, node_input, want);
        assert_matches(got, want, n, dtypes[d], 2.0 / L, "device, nccl", c);
      } else {
        reference(members, 0, groups, c, n, dtypes[d], mixed_input, want);
        assert_matches(got, want, n, dtypes[d], 2.0, "device, staged", c);
      }
      free(got);
      free(want);
      cudaFree(bufs[d * kC + c]);
    }
  free(members);
}

int main(int argc, char** argv) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(fused_device_batch)};
  return gpu_runtime_main(argc, argv, "gpu-adasum", tests, sizeof tests / sizeof tests[0]);
}
