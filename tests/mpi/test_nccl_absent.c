/* A job whose NCCL cannot be loaded (HVD_NCCL_LIBRARY names a missing file, set by
 * meson.build): host collectives work and never load NCCL, asking for NCCL's version
 * loads nothing either, and a device collective fails on every rank with a status and
 * a sentence, never a crash: without a GPU the rank's lack of one, with a GPU the NCCL
 * that could not be loaded and what to set. */
#include <dlfcn.h>
#include <mpi.h>

#include "test_util.h"

#if HVD_TEST_CUDA
#include <cuda_runtime_api.h>
#endif

static int nccl_in_process(void) {
  void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (handle) dlclose(handle);
  return handle != NULL;
}

static void assert_last_error_mentions(const char* part) {
  const char* text = hvd_last_error();
  if (!strstr(text, part)) fail_msg("last error '%s' should mention '%s'", text, part);
}

static void host_collectives_load_no_nccl(void** state) {
  (void)state;
  const int size = hvd_size();
  float v[4] = {1, 2, 3, 4};
  assert_hvd_ok(hvd_allreduce(v, v, 4, HVD_FLOAT32, HVD_OP_SUM, "absent.allreduce"));
  for (int i = 0; i < 4; ++i) assert_true(v[i] == (float)((i + 1) * size));
  int32_t b = hvd_rank() == 0 ? 42 : 0;
  assert_hvd_ok(hvd_broadcast(&b, 1, HVD_INT32, 0, "absent.broadcast"));
  assert_int_equal(b, 42);
  assert_false(nccl_in_process());
  /* The version is the build's when no NCCL is in the process: asking loads none. */
  assert_int_equal(hvd_nccl_version() > 0, hvd_nccl_built() == 1);
  assert_false(nccl_in_process());
}

static void device_collective_fails_clearly(void** state) {
  (void)state;
  hvd_op_options_t opts = HVD_OP_OPTIONS_INITIALIZER;
  opts.device = 0;
  float host[4] = {1, 2, 3, 4};
  if (!hvd_cuda_built()) {
    hvd_handle_t h;
    assert_hvd_status(hvd_allreduce_async(host, host, 4, HVD_FLOAT32, HVD_OP_SUM, "absent.device",
                                          &opts, &h),
                      HVD_ERR_UNSUPPORTED);
    assert_last_error_mentions("without CUDA");
    return;
  }
  /* Ranks agree on whether to expect a GPU's error or the lack of one. */
  int with_gpu = hvd_gpu_device() >= 0, all_gpu = 0;
  MPI_Allreduce(&with_gpu, &all_gpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  hvd_handle_t h;
  if (!all_gpu) {
    assert_hvd_ok(hvd_allreduce_async(host, host, 4, HVD_FLOAT32, HVD_OP_SUM, "absent.device",
                                      &opts, &h));
    hvd_status_t st = hvd_wait(h);
    if (!with_gpu) {
      assert_int_equal(st, HVD_ERR_CUDA);
      assert_last_error_mentions("no GPU");
    }
    return;
  }
#if HVD_TEST_CUDA
  if (!hvd_nccl_built()) return; /* device tensors are staged through host memory */
  opts.device = hvd_gpu_device();
  void* dev = NULL;
  assert_int_equal(cudaSetDevice(opts.device), cudaSuccess);
  assert_int_equal(cudaMalloc(&dev, sizeof host), cudaSuccess);
  assert_int_equal(cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice), cudaSuccess);
  assert_hvd_status(hvd_allreduce_async(dev, dev, 4, HVD_FLOAT32, HVD_OP_SUM, "absent.device",
                                        &opts, &h),
                    HVD_SUCCESS);
  assert_hvd_status(hvd_wait(h), HVD_ERR_NCCL);
  assert_last_error_mentions(getenv("HVD_NCCL_LIBRARY"));
  assert_last_error_mentions("HOROVOD_GPU_OPERATIONS=MPI");
  cudaFree(dev);
  /* The job goes on: host collectives still work. */
  assert_hvd_ok(hvd_allreduce(host, host, 4, HVD_FLOAT32, HVD_OP_SUM, "absent.after"));
#endif
}

int main(void) {
  const char* path = getenv("HVD_NCCL_LIBRARY");
  if (!path || !*path) {
    fprintf(stderr, "test_nccl_absent: run with HVD_NCCL_LIBRARY naming a missing file\n");
    return 2;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(host_collectives_load_no_nccl),
      cmocka_unit_test(device_collective_fails_clearly),
  };
  return cmocka_run_group_tests_name("nccl_absent", tests, tu_group_init, tu_group_shutdown);
}
