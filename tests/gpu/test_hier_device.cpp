// The device hierarchical allreduce and allgather as the executor drives them, on
// several "nodes" (Hydra's fork launcher with fake host names): every dtype and
// reduce op, sizes 0, 1, local_size - 1, odd and large, results equal to the flat
// device algorithm's (bytewise) and to the host reference, and the traffic counters
// showing 1/local_size of the flat cross-node bytes.
// argv[1]: "nccl" (NCCL within and across nodes: one GPU per rank), "nccl-mpi-cross"
// (NCCL within nodes, MPI on host copies across), "staged" (HOROVOD_GPU_OPERATIONS=MPI:
// the host algorithm through pinned memory; ranks may share a GPU).
#include <cmath>
#include <cstring>
#include <string>

#include "gpu_test_util.h"
#include "queue/process_sets.h"
#include "ops/device/device_engine.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_types.h"

using namespace hvd;
using namespace hvd_test;

namespace {

struct Layout {
  NodeLayout node;
  std::vector<int> node_of, local_rank_of;
};

// The same communicators and facts the runtime derives at init.
Layout make_layout(int rank, int size) {
  Layout out;
  NodeLayout& l = out.node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &l.local);
  MPI_Comm_rank(l.local, &l.local_rank);
  MPI_Comm_size(l.local, &l.local_size);
  MPI_Comm_split(MPI_COMM_WORLD, l.local_rank, rank, &l.cross);
  MPI_Comm_rank(l.cross, &l.cross_rank);
  MPI_Comm_size(l.cross, &l.cross_size);
  int sizes[2] = {l.local_size, -l.local_size}, extremes[2];
  MPI_Allreduce(sizes, extremes, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  l.homogeneous = extremes[0] == -extremes[1];
  l.max_local_size = extremes[0];
  int leader = l.local_rank == 0;
  MPI_Allreduce(&leader, &l.num_nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  l.leaders = leader ? l.cross : MPI_COMM_NULL;
  int node = leader ? l.cross_rank : 0;
  MPI_Bcast(&node, 1, MPI_INT, 0, l.local);
  int mine[2] = {node, l.local_rank};
  std::vector<int> all(2 * static_cast<size_t>(size));
  MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < size; ++r) {
    out.node_of.push_back(all[2 * r]);
    out.local_rank_of.push_back(all[2 * r + 1]);
  }
  return out;
}

// Small values: every reduction below is exact in every dtype.
double input(int q, int64_t i, hvd_reduce_op_t op) {
  return static_cast<double>((i + q) % 2 + (op == HVD_OP_PRODUCT ? 1 : q % 3));
}

double expected(int size, int64_t i, hvd_dtype_t d, hvd_reduce_op_t op) {
  double acc = op == HVD_OP_PRODUCT ? 1 : op == HVD_OP_MIN ? 1e300 : op == HVD_OP_MAX ? -1e300 : 0;
  for (int q = 0; q < size; ++q) {
    double x = input(q, i, op);
    if (d == HVD_BOOL) x = x != 0;
    if (op == HVD_OP_SUM || op == HVD_OP_AVERAGE) acc += x;
    else if (op == HVD_OP_MIN) acc = std::fmin(acc, x);
    else if (op == HVD_OP_MAX) acc = std::fmax(acc, x);
    else acc *= x;
  }
  if (op == HVD_OP_AVERAGE) acc /= size;
  if (d == HVD_BOOL) acc = acc != 0;
  return acc;
}

void set_element(std::vector<unsigned char>& t, hvd_dtype_t dtype, int64_t i, double v) {
  unsigned char* p = t.data() + i * dtype_size(dtype);
  switch (dtype) {
    case HVD_UINT8: case HVD_BOOL: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(p, &x, 1); break; }
    case HVD_INT8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
    case HVD_UINT16: { uint16_t x = static_cast<uint16_t>(v); std::memcpy(p, &x, 2); break; }
    case HVD_INT16: { int16_t x = static_cast<int16_t>(v); std::memcpy(p, &x, 2); break; }
    case HVD_INT32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case HVD_INT64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
    case HVD_FLOAT16: { uint16_t x = float_to_half(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case HVD_BFLOAT16: { uint16_t x = float_to_bf16(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case HVD_FLOAT32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
    case HVD_FLOAT64: std::memcpy(p, &v, 8); break;
  }
}

double get_element(const std::vector<unsigned char>& t, hvd_dtype_t dtype, int64_t i) {
  const unsigned char* p = t.data() + i * dtype_size(dtype);
  switch (dtype) {
    case HVD_UINT8: return *p;
    case HVD_BOOL: return *p != 0;
    case HVD_INT8: return *reinterpret_cast<const int8_t*>(p);
    case HVD_UINT16: { uint16_t x; std::memcpy(&x, p, 2); return x; }
    case HVD_INT16: { int16_t x; std::memcpy(&x, p, 2); return x; }
    case HVD_INT32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case HVD_INT64: { int64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case HVD_FLOAT16: { uint16_t x; std::memcpy(&x, p, 2); return half_to_float(x); }
    case HVD_BFLOAT16: { uint16_t x; std::memcpy(&x, p, 2); return bf16_to_float(x); }
    case HVD_FLOAT32: { float x; std::memcpy(&x, p, 4); return x; }
    case HVD_FLOAT64: { double x; std::memcpy(&x, p, 8); return x; }
  }
  return 0;
}

bool is_float(hvd_dtype_t d) {
  return d == HVD_FLOAT16 || d == HVD_BFLOAT16 || d == HVD_FLOAT32 || d == HVD_FLOAT64;
}

struct Job {
  int rank = 0, size = 1;
  Layout layout;
  TrafficCounters* counters;
  DeviceEngine* engine;
  HierarchicalAllreduce* hier;
  HierarchicalAllgather* hier_ag;
  Communicator world;
};

void finish(DeviceEngine& engine) {
  DeviceEvent done;
  CHECK_OK(engine.finish(&done));
  CHECK_OK(done.synchronize());
}

// Every dtype x op x size, hierarchical and flat on the same inputs.
void allreduce_matches_flat(Job& job) {
  const int L = job.layout.node.local_size;
  const int64_t sizes[] = {0, 1, L > 1 ? L - 1 : 2, 7, 1001, 400001};
  const hvd_reduce_op_t ops[] = {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT};
  for (hvd_dtype_t dtype : kAllDtypes) {
    const size_t esize = dtype_size(dtype);
    for (hvd_reduce_op_t op : ops) {
      if (dtype == HVD_BOOL && op == HVD_OP_AVERAGE) continue;
      for (int64_t n : sizes) {
        if (n > 100000 && dtype != HVD_FLOAT32 && dtype != HVD_INT32) continue;
        std::vector<unsigned char> host(static_cast<size_t>(n) * esize);
        for (int64_t i = 0; i < n; ++i) set_element(host, dtype, i, input(job.rank, i, op));
        void* a = to_device(host);
        void* b = to_device(host);
        void* out = nullptr;
        CHECK_CUDA(cudaMalloc(&out, host.empty() ? 1 : host.size()));
        // In place, hierarchical; out of place, hierarchical; in place, flat.
        CHECK_OK(job.engine->allreduce({{a, a, n}}, dtype, op, 1.0, 1.0, job.world, job.hier));
        CHECK_OK(job.engine->allreduce({{b, out, n}}, dtype, op, 1.0, 1.0, job.world, job.hier));
        CHECK_OK(job.engine->allreduce({{b, b, n}}, dtype, op, 1.0, 1.0, job.world, nullptr));
        finish(*job.engine);
        auto hier = to_host(a, host.size()), hier2 = to_host(out, host.size()), flat = to_host(b, host.size());
        if (hier != flat || hier2 != flat) {
          std::fprintf(stderr, "rank %d: %s op %d n %lld: hierarchical result differs from flat\n",
                       job.rank, dtype_name(dtype), static_cast<int>(op), static_cast<long long>(n));
          std::exit(1);
        }
        for (int64_t i = 0; i < n; ++i) {
          const double want = expected(job.size, i, dtype, op), got = get_element(hier, dtype, i);
          // Integer averages truncate.
          const bool ok = got == want || (op == HVD_OP_AVERAGE && !is_float(dtype) && std::fabs(got - want) < 1) ||
                          (is_float(dtype) && std::fabs(got - want) <= 2e-2 * std::fmax(1.0, std::fabs(want)));
          if (!ok) {
            std::fprintf(stderr, "rank %d: %s op %d n %lld [%lld]: %g, expected %g\n", job.rank,
                         dtype_name(dtype), static_cast<int>(op), static_cast<long long>(n),
                         static_cast<long long>(i), got, want);
            std::exit(1);
          }
        }
        cudaFree(a);
        cudaFree(b);
        cudaFree(out);
      }
    }
  }
  // Several tensors fused through the device fusion buffer, with scaling.
  std::vector<void*> bufs;
  std::vector<DeviceTensor> tensors;
  for (int64_t n : {5, 1, 3000}) {
    std::vector<unsigned char> host(static_cast<size_t>(n) * 4);
    for (int64_t i = 0; i < n; ++i) set_element(host, HVD_FLOAT32, i, 2.0 * (job.rank + 1));
    bufs.push_back(to_device(host));
    tensors.push_back({bufs.back(), bufs.back(), n});
  }
  CHECK_OK(job.engine->allreduce(tensors, HVD_FLOAT32, HVD_OP_AVERAGE, 0.5, 2.0, job.world, job.hier));
  finish(*job.engine);
  for (size_t t = 0; t < bufs.size(); ++t) {
    auto got = to_host(bufs[t], static_cast<size_t>(tensors[t].count) * 4);
    for (int64_t i = 0; i < tensors[t].count; ++i) CHECK(get_element(got, HVD_FLOAT32, i) == job.size + 1.0);
    cudaFree(bufs[t]);
  }
}

// Cross-node bytes of a large hierarchical allreduce: 1/local_size of the flat one's
// on even nodes; only first ranks cross nodes otherwise. Nothing goes flat.
void counters_show_the_cross_node_traffic(Job& job) {
  const NodeLayout& l = job.layout.node;
  const int64_t n = 1 << 20;
  const double bytes = 4.0 * n;
  std::vector<unsigned char> host(static_cast<size_t>(bytes));
  for (int64_t i = 0; i < n; ++i) set_element(host, HVD_FLOAT32, i, 1.0);
  void* d = to_device(host);
  const uint64_t global0 = job.counters->global_bytes, cross0 = job.counters->cross_bytes,
                 local0 = job.counters->local_bytes;
  CHECK_OK(job.engine->allreduce({{d, d, n}}, HVD_FLOAT32, HVD_OP_SUM, 1.0, 1.0, job.world, job.hier));
  finish(*job.engine);
  CHECK(get_element(to_host(d, 4), HVD_FLOAT32, 0) == job.size);
  const uint64_t global = job.counters->global_bytes - global0, cross = job.counters->cross_bytes - cross0,
                 local = job.counters->local_bytes - local0;
  CHECK(global == 0);
  if (l.local_size > 1) CHECK(local > 0);
  if (l.homogeneous) {
    const int C = l.cross_size, L = l.local_size;
    const double want = 2.0 * (C - 1) / C * (bytes / L);
    if (std::fabs(static_cast<double>(cross) - want) > 16 * 1024) {
      std::fprintf(stderr, "rank %d: cross bytes %llu, expected about %g\n", job.rank,
                   static_cast<unsigned long long>(cross), want);
      std::exit(1);
    }
  } else if (l.local_rank != 0) {
    CHECK(cross == 0);
  } else {
    CHECK(cross > 0);
  }
  // The flat algorithm on the same buffer: all of it global.
  const uint64_t g1 = job.counters->global_bytes;
  CHECK_OK(job.engine->allreduce({{d, d, n}}, HVD_FLOAT32, HVD_OP_SUM, 1.0, 1.0, job.world, nullptr));
  finish(*job.engine);
  CHECK(job.counters->global_bytes - g1 + 8 >= static_cast<uint64_t>(2.0 * (job.size - 1) / job.size * bytes));
  cudaFree(d);
}

// Rank r contributes (r % 3) * 5 rows of 3 (rank 0: none), in place and not.
void allgather_matches_flat(Job& job) {
  for (hvd_dtype_t dtype : {HVD_FLOAT32, HVD_UINT8, HVD_INT16, HVD_FLOAT64}) {
    const size_t esize = dtype_size(dtype);
    for (int64_t scale : {1, 20000}) {
      std::vector<int64_t> counts;
      for (int r = 0; r < job.size; ++r) counts.push_back((r % 3) * 5 * 3 * scale);
      std::vector<int64_t> displs(counts.size());
      int64_t total = 0;
      for (size_t r = 0; r < counts.size(); ++r) displs[r] = total, total += counts[r];
      std::vector<unsigned char> want(static_cast<size_t>(total) * esize);
      for (int r = 0; r < job.size; ++r)
        for (int64_t i = 0; i < counts[r]; ++i) set_element(want, dtype, displs[r] + i, (r * 7 + i) % 100);
      std::vector<unsigned char> mine(want.begin() + displs[job.rank] * esize,
                                      want.begin() + (displs[job.rank] + counts[job.rank]) * esize);
      void* send = to_device(mine);
      void* hier_out = nullptr;
      void* flat_out = nullptr;
      CHECK_CUDA(cudaMalloc(&hier_out, want.size() + 1));
      CHECK_CUDA(cudaMalloc(&flat_out, want.size() + 1));
      DeviceHierarchicalAllgather& hier = job.engine->hierarchical_allgather(job.hier_ag);
      CHECK(hier.fits(counts, dtype));
      const uint64_t global0 = job.counters->global_bytes, cross0 = job.counters->cross_bytes;
      CHECK_OK(hier.allgatherv(send, hier_out, counts, displs, dtype));
      finish(*job.engine);
      CHECK(job.counters->global_bytes == global0);
      if (job.layout.node.local_rank != 0) CHECK(job.counters->cross_bytes == cross0);
      CHECK(to_host(hier_out, want.size()) == want);
      CHECK_OK(job.engine->backend_for(dtype, false)
                   .allgatherv(send, flat_out, counts, displs, dtype, job.world));
      finish(*job.engine);
      CHECK(to_host(flat_out, want.size()) == to_host(hier_out, want.size()));
      // In place: this rank's block already sits in the output.
      CHECK_CUDA(cudaMemset(hier_out, 0, want.size() + 1));
      if (!mine.empty())
        CHECK_CUDA(cudaMemcpy(static_cast<char*>(hier_out) + displs[job.rank] * esize, mine.data(),
                              mine.size(), cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaDeviceSynchronize());  // no caller stream: see to_device
      CHECK_OK(hier.allgatherv(static_cast<char*>(hier_out) + displs[job.rank] * esize, hier_out,
                               counts, displs, dtype));
      finish(*job.engine);
      CHECK(to_host(hier_out, want.size()) == want);
      cudaFree(send);
      cudaFree(hier_out);
      cudaFree(flat_out);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Job job;
  MPI_Comm_rank(MPI_COMM_WORLD, &job.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &job.size);
  const std::string mode = argc > 1 ? argv[1] : "nccl";
  const bool nccl = mode != "staged";
  const int devices = cuda_device_count(nullptr);
  // NCCL refuses two ranks of one communicator on one GPU: it needs a GPU per rank.
  int have = (nccl ? devices >= job.size : devices > 0) ? 1 : 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (job.rank == 0)
      std::printf("gpu-hier-%s: skipped: %s\n", mode.c_str(),
                  nccl ? "needs one CUDA device per rank" : "no CUDA device");
    MPI_Finalize();
    return kSkip;
  }
  mpi_types_init();
  job.layout = make_layout(job.rank, job.size);
  {
    TrafficCounters counters;
    MpiBackend mpi(1 << 20, &counters);
    HierarchicalAllreduce hier(job.layout.node, 1 << 20, &counters);
    HierarchicalAllgather hier_ag(job.layout.node, job.layout.node_of, job.layout.local_rank_of,
                                  job.rank, &counters);
    CHECK(hier.useful());
    std::unique_ptr<DeviceEngine> engine;
    CHECK_OK(DeviceEngine::create(nccl ? job.rank : job.rank % devices,
                                  nccl ? GpuOperations::Nccl : GpuOperations::Mpi, "", &mpi,
                                  &counters, &engine));
    if (mode == "nccl-mpi-cross") engine->set_hierarchical_cross(CrossTransport::Mpi);
    std::vector<int> everyone;
    for (int r = 0; r < job.size; ++r) everyone.push_back(r);
    auto world = make_process_set(0, everyone, MPI_COMM_WORLD, job.rank, job.size);
    CHECK_OK(engine->process_set_added(world->communicator()));
    job.counters = &counters;
    job.engine = engine.get();
    job.hier = &hier;
    job.hier_ag = &hier_ag;
    job.world = world->communicator();
    if (job.rank == 0)
      std::printf("gpu-hier-%s: %d ranks, local size %d, %s nodes\n", mode.c_str(), job.size,
                  job.layout.node.local_size, job.layout.node.homogeneous ? "even" : "uneven");

    allreduce_matches_flat(job);
    counters_show_the_cross_node_traffic(job);
    allgather_matches_flat(job);

    engine.reset();
    MPI_Comm_free(&world->comm);
  }
  MPI_Comm_free(&job.layout.node.local);
  MPI_Comm_free(&job.layout.node.cross);
  mpi_types_free();
  if (job.rank == 0) std::printf("gpu-hier-%s: ok on %d rank(s)\n", mode.c_str(), job.size);
  MPI_Finalize();
  return 0;
}
