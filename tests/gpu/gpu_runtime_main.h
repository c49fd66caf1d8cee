/* main() of the GPU tests that go through the public API under mpiexec: MPI first
 * (thread multiple), then every rank checks for a device before hvd_init. With NCCL
 * (HOROVOD_GPU_OPERATIONS unset or NCCL) each rank needs its own device, which the
 * test picks itself (run with HVD_GPU_PINNING=0); with MPI ranks may share one. All
 * ranks skip alike (77) when any lacks what it needs. */
#ifndef HVD_TESTS_GPU_RUNTIME_MAIN_H
#define HVD_TESTS_GPU_RUNTIME_MAIN_H

#include <cuda_runtime_api.h>
#include <mpi.h>

#include "../mpi/test_util.h"

static int g_device = -1;

static inline int nccl_mode(void) {
  const char* v = getenv("HOROVOD_GPU_OPERATIONS");
  return !(v && (strcmp(v, "MPI") == 0 || strcmp(v, "mpi") == 0));
}

static inline int gpu_runtime_main(int argc, char** argv, const char* group,
                                   const struct CMUnitTest* tests, size_t count) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1, devices = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  int have = (nccl_mode() ? devices >= size : devices > 0) ? 1 : 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (rank == 0)
      printf("%s: skipped: %s\n", group, nccl_mode() ? "NCCL needs one CUDA device per rank" : "no CUDA device");
    MPI_Finalize();
    return 77;
  }
  g_device = nccl_mode() ? rank : rank % devices;
  if (cudaSetDevice(g_device) != cudaSuccess) {
    fprintf(stderr, "cudaSetDevice(%d) failed\n", g_device);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int failed = _cmocka_run_group_tests(group, tests, count, tu_group_init, tu_group_shutdown);
  MPI_Finalize();
  return failed ? 1 : 0;
}

#endif
