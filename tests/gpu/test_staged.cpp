// The host-staged backend: device tensors through pinned host memory and MPI, every
// collective and every dtype (16-bit integers included). Ranks may share one GPU.
#include "collective_check.h"
#include "queue/process_sets.h"
#include "ops/device/staged_backend.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_types.h"

using namespace hvd;
using namespace hvd_test;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int have = cuda_device_count(nullptr) > 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (rank == 0) std::printf("gpu-staged: skipped: no CUDA device\n");
    MPI_Finalize();
    return kSkip;
  }
  mpi_types_init();
  {
    std::unique_ptr<DeviceContext> ctx;
    CHECK_OK(DeviceContext::create(rank % cuda_device_count(nullptr), &ctx));
    TrafficCounters counters;
    MpiBackend mpi(8 << 20, &counters);
    StagedBackend staged(ctx.get(), &mpi);
    std::vector<int> everyone;
    for (int r = 0; r < size; ++r) everyone.push_back(r);
    auto world = make_process_set(0, everyone, MPI_COMM_WORLD, rank, size);
    check_collectives(staged, *ctx, world->communicator(), [](hvd_dtype_t) { return true; });
    MPI_Comm_free(&world->comm);
  }
  mpi_types_free();
  if (rank == 0) std::printf("gpu-staged: ok on %d rank(s)\n", size);
  MPI_Finalize();
  return 0;
}
