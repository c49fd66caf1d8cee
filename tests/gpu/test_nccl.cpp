// The NCCL backend on device memory: every collective, every dtype it reduces, on
// the global set; a grouped allreduce; a second process set. Run under mpiexec; one
// rank is enough (and all one GPU allows), more ranks need one GPU each.
#include "collective_check.h"
#include "queue/process_sets.h"
#include "ops/nccl/nccl_backend.h"

using namespace hvd;
using namespace hvd_test;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Skip on every rank alike: each needs its own device.
  int have = cuda_device_count(nullptr) >= size ? 1 : 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (rank == 0) std::printf("gpu-nccl: skipped: needs one CUDA device per rank\n");
    MPI_Finalize();
    return kSkip;
  }
  {
    std::unique_ptr<DeviceContext> ctx;
    CHECK_OK(DeviceContext::create(rank, &ctx));
    TrafficCounters counters;
    NcclBackend nccl(ctx.get(), &counters, "");
    std::vector<int> everyone;
    for (int r = 0; r < size; ++r) everyone.push_back(r);
    auto world = make_process_set(0, everyone, MPI_COMM_WORLD, rank, size);
    const Communicator comm = world->communicator();
    CHECK_OK(nccl.process_set_added(comm));
    check_collectives(nccl, *ctx, comm, [](hvd_dtype_t d) { return NcclBackend::supports(d); });
    CHECK(counters.collectives.load() > 0);

    // 16-bit integers are refused with a reason, not reduced wrongly.
    void* d = nullptr;
    CHECK_CUDA(cudaMalloc(&d, 64));
    Error err = nccl.allreduce(d, d, 8, HVD_INT16, HVD_OP_SUM, comm);
    CHECK(err.status == HVD_ERR_UNSUPPORTED);

    // Grouped: three allreduces in one NCCL group.
    std::vector<void*> bufs;
    for (int i = 0; i < 3; ++i) bufs.push_back(to_device(random_tensor(HVD_FLOAT32, 1000, 7 + i)));
    CHECK_OK(nccl.group_start());
    for (void* b : bufs) CHECK_OK(nccl.allreduce(b, b, 1000, HVD_FLOAT32, HVD_OP_SUM, comm));
    CHECK_OK(nccl.group_end());
    DeviceEvent done;
    CHECK_OK(ctx->record(&done));
    CHECK_OK(done.synchronize());
    for (int i = 0; i < 3; ++i) {
      auto in = random_tensor(HVD_FLOAT32, 1000, 7 + i);
      auto got = to_host(bufs[i], 4000);
      for (int64_t k = 0; k < 1000; ++k) CHECK(element(got, HVD_FLOAT32, k) == element(in, HVD_FLOAT32, k) * size);
      cudaFree(bufs[i]);
    }

    // A second set (all ranks, another id), its own communicator, then removed.
    auto second = make_process_set(1, everyone, MPI_COMM_WORLD, rank, size);
    CHECK_OK(nccl.process_set_added(second->communicator()));
    CHECK_OK(nccl.broadcast(d, 16, HVD_UINT8, 0, second->communicator()));
    CHECK_OK(ctx->synchronize());
    nccl.process_set_removed(second->communicator());
    MPI_Comm_free(&second->comm);

    // Local communicator for hierarchical algorithms.
    CHECK_OK(nccl.add_communicator(NcclBackend::kLocalComm, MPI_COMM_WORLD));
    CHECK_OK(nccl.allreduce_on(NcclBackend::kLocalComm, d, d, 16, HVD_FLOAT32, HVD_OP_MAX));
    CHECK(nccl.allreduce_on(NcclBackend::kCrossComm, d, d, 16, HVD_FLOAT32, HVD_OP_MAX).status == HVD_ERR_INTERNAL);
    CHECK_OK(ctx->synchronize());
    cudaFree(d);
    MPI_Comm_free(&world->comm);
  }
  if (rank == 0) std::printf("gpu-nccl: ok on %d rank(s)\n", size);
  MPI_Finalize();
  return 0;
}
