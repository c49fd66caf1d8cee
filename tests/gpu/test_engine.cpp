// The device engine's allreduce as the executor calls it: several tensors fused
// through the device fusion buffer, AVERAGE with prescale and postscale, a joined
// rank's zeros, ordered after a caller stream; single tensors without fusion. Then
// its reducescatter: fused with uneven rows, in place, scaled; one alone. MIN and MAX
// of floats with NaN, signed zeros and infinities give the host's bytes.
// argv[1]: "nccl" or "mpi" (HOROVOD_GPU_OPERATIONS). Ranks may share a GPU with mpi.
#include <algorithm>
#include <cstring>
#include <iterator>

#include "gpu_test_util.h"
#include "queue/process_sets.h"
#include "ops/device/device_engine.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_types.h"

using namespace hvd;
using namespace hvd_test;

namespace {

// NaN (this rank's own sign and payload), -0, +0, +inf, -inf, 1.5, -2.5 in a float
// dtype, as little-endian bytes.
std::vector<unsigned char> special_floats(hvd_dtype_t dtype, int64_t n, int rank) {
  static const uint64_t bits[4][7] = {
      {0x7e00, 0x8000, 0, 0x7c00, 0xfc00, 0x3e00, 0xc100},
      {0x7fc0, 0x8000, 0, 0x7f80, 0xff80, 0x3fc0, 0xc020},
      {0x7fc00000u, 0x80000000u, 0, 0x7f800000u, 0xff800000u, 0x3fc00000u, 0xc0200000u},
      {0x7ff8000000000000ull, 0x8000000000000000ull, 0, 0x7ff0000000000000ull,
       0xfff0000000000000ull, 0x3ff8000000000000ull, 0xc004000000000000ull}};
  const int t = dtype == HVD_FLOAT16 ? 0 : dtype == HVD_BFLOAT16 ? 1 : dtype == HVD_FLOAT32 ? 2 : 3;
  const size_t esize = dtype_size(dtype);
  std::vector<unsigned char> out(static_cast<size_t>(n) * esize);
  for (int64_t i = 0; i < n; ++i) {
    // Ranks 0 and 1 meet every pair of kinds; the others shift rank 0's.
    const int kind = static_cast<int>(rank == 1 ? (i / 7) % 7 : (i + rank) % 7);
    uint64_t b = bits[t][kind];
    if (kind == 0) b |= static_cast<uint64_t>(rank + 1) | (rank % 2 ? uint64_t{1} << (8 * esize - 1) : 0);
    std::memcpy(out.data() + i * static_cast<int64_t>(esize), &b, esize);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const bool use_nccl = argc > 1 && std::strcmp(argv[1], "nccl") == 0;
  const int devices = cuda_device_count(nullptr);
  int have = (use_nccl ? devices >= size : devices > 0) ? 1 : 0, all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (rank == 0) std::printf("gpu-engine: skipped: not enough CUDA devices\n");
    MPI_Finalize();
    return kSkip;
  }
  mpi_types_init();
  {
    TrafficCounters counters;
    MpiBackend mpi(8 << 20, &counters);
    std::unique_ptr<DeviceEngine> engine;
    CHECK_OK(DeviceEngine::create(rank % devices, use_nccl ? GpuOperations::Nccl : GpuOperations::Mpi,
                                  "", &mpi, &counters, &engine));
    std::printf("rank %d: %s\n", rank, engine->description().c_str());
    std::vector<int> everyone;
    for (int r = 0; r < size; ++r) everyone.push_back(r);
    auto world = make_process_set(0, everyone, MPI_COMM_WORLD, rank, size);
    const Communicator comm = world->communicator();
    CHECK_OK(engine->process_set_added(comm));

    for (hvd_dtype_t dtype : {HVD_FLOAT32, HVD_FLOAT16, HVD_BFLOAT16, HVD_INT32, HVD_FLOAT64}) {
      const size_t esize = dtype_size(dtype);
      const int64_t counts[] = {1000, 1, 70000, 33};
      std::vector<DeviceTensor> tensors;
      std::vector<void*> bufs;
      cudaStream_t user;
      CHECK_CUDA(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking));
      for (int64_t n : counts) {
        // Every rank holds 2 * (rank + 1) everywhere: easy to average exactly.
        std::vector<unsigned char> host(n * esize);
        for (int64_t i = 0; i < n; ++i) {
          const double v = 2.0 * (rank + 1);
          unsigned char* p = host.data() + i * esize;
          if (dtype == HVD_FLOAT32) { float x = static_cast<float>(v); std::memcpy(p, &x, 4); }
          if (dtype == HVD_FLOAT64) std::memcpy(p, &v, 8);
          if (dtype == HVD_INT32) { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); }
          if (dtype == HVD_FLOAT16) { uint16_t x = float_to_half(static_cast<float>(v)); std::memcpy(p, &x, 2); }
          if (dtype == HVD_BFLOAT16) { uint16_t x = float_to_bf16(static_cast<float>(v)); std::memcpy(p, &x, 2); }
        }
        void* d = nullptr;
        CHECK_CUDA(cudaMalloc(&d, n * esize));
        // Written on the caller's stream just before the operation.
        CHECK_CUDA(cudaMemsetAsync(d, 0x7f, n * esize, user));
        CHECK_CUDA(cudaMemcpyAsync(d, host.data(), n * esize, cudaMemcpyHostToDevice, user));
        bufs.push_back(d);
        tensors.push_back({d, d, n});
      }
      // A tensor this rank has no data for (a joined rank's): zeros in the buffer.
      tensors.push_back({nullptr, nullptr, 17});
      CHECK_OK(engine->begin({user}));
      // Sum of 2(r+1) over n ranks is n(n+1), its average n + 1; the scale factors
      // cancel, in an order that keeps integer averages exact.
      const double pre = dtype == HVD_INT32 ? 2.0 : 0.5;
      CHECK_OK(engine->allreduce(tensors, dtype, HVD_OP_AVERAGE, pre, 1.0 / pre, comm));
      DeviceEvent done;
      CHECK_OK(engine->finish(&done));
      CHECK_OK(done.synchronize());
      CHECK_CUDA(cudaStreamSynchronize(user));
      const double want = size + 1;
      for (size_t t = 0; t < bufs.size(); ++t) {
        auto got = to_host(bufs[t], counts[t] * esize);
        for (int64_t i = 0; i < counts[t]; ++i) {
          const unsigned char* p = got.data() + i * esize;
          double g = 0;
          if (dtype == HVD_FLOAT32) { float x; std::memcpy(&x, p, 4); g = x; }
          if (dtype == HVD_FLOAT64) std::memcpy(&g, p, 8);
          if (dtype == HVD_INT32) { int32_t x; std::memcpy(&x, p, 4); g = x; }
          if (dtype == HVD_FLOAT16) { uint16_t x; std::memcpy(&x, p, 2); g = half_to_float(x); }
          if (dtype == HVD_BFLOAT16) { uint16_t x; std::memcpy(&x, p, 2); g = bf16_to_float(x); }
          if (g != want) {
            std::fprintf(stderr, "%s tensor %zu element %lld: %g, expected %g\n", dtype_name(dtype), t,
                         static_cast<long long>(i), g, want);
            return 1;
          }
        }
        cudaFree(bufs[t]);
      }
      // One tensor alone goes without the fusion buffer.
      void* one = to_device(random_tensor(dtype, 5000, 3));
      CHECK_OK(engine->allreduce({{one, one, 5000}}, dtype, HVD_OP_MAX, 1.0, 1.0, comm));
      CHECK_OK(engine->finish(&done));
      CHECK_OK(done.synchronize());
      CHECK(to_host(one, 5000 * esize) == random_tensor(dtype, 5000, 3));  // same on every rank
      cudaFree(one);
      for (hvd_reduce_op_t op : {HVD_OP_MIN, HVD_OP_MAX}) {
        if (!dtype_is_float(dtype)) break;
        const int64_t n = 49;
        std::vector<unsigned char> host_result = special_floats(dtype, n, 0);
        for (int r = 1; r < size; ++r)
          reduce_elements(special_floats(dtype, n, r).data(), host_result.data(), n, dtype, op);
        void* a = to_device(special_floats(dtype, n, rank));
        void* b = to_device(special_floats(dtype, n, rank));
        CHECK_OK(engine->allreduce({{a, a, n}}, dtype, op, 1.0, 1.0, comm));  // alone
        CHECK_OK(engine->finish(&done));
        CHECK_OK(done.synchronize());
        CHECK(to_host(a, n * esize) == host_result);
        CHECK_CUDA(cudaMemcpy(a, special_floats(dtype, n, rank).data(), n * esize, cudaMemcpyHostToDevice));
        CHECK_OK(engine->allreduce({{a, a, n}, {b, b, n}}, dtype, op, 1.0, 1.0, comm));  // fused
        CHECK_OK(engine->finish(&done));
        CHECK_OK(done.synchronize());
        CHECK(to_host(a, n * esize) == host_result && to_host(b, n * esize) == host_result);
        cudaFree(a);
        cudaFree(b);
      }
      cudaStreamDestroy(user);
    }
    // Reducescatter: several tensors with uneven rows fused (one in place), AVERAGE
    // with scaling; then one tensor alone (straight to the backend), SUM.
    {
      const int64_t cols = 3;
      const int64_t dims[] = {0, 1, 5, 2 * size + 1, 97};
      std::vector<DeviceScatterTensor> tensors;
      std::vector<void*> sends, recvs;
      for (size_t k = 0; k < std::size(dims); ++k) {
        std::vector<double> host(static_cast<size_t>(dims[k] * cols));
        for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<double>((i + k) % 4 + rank);
        void* send = nullptr;
        CHECK_CUDA(cudaMalloc(&send, std::max<size_t>(host.size(), 1) * 8));
        CHECK_CUDA(cudaMemcpy(send, host.data(), host.size() * 8, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaDeviceSynchronize());  // no caller stream: see to_device
        void* recv = send;  // tensor 2 in place
        if (k != 2) CHECK_CUDA(cudaMalloc(&recv, std::max<size_t>(host.size(), 1) * 8));
        std::vector<int64_t> counts;
        for (int q = 0; q < size; ++q) counts.push_back((dims[k] / size + (q < dims[k] % size ? 1 : 0)) * cols);
        tensors.push_back({send, recv, counts});
        sends.push_back(send);
        recvs.push_back(recv);
      }
      CHECK_OK(engine->begin({nullptr}));
      CHECK_OK(engine->reducescatter(tensors, HVD_FLOAT64, HVD_OP_AVERAGE, 2.0, 0.5, comm));
      DeviceEvent done;
      CHECK_OK(engine->finish(&done));
      CHECK_OK(done.synchronize());
      for (size_t k = 0; k < tensors.size(); ++k) {
        int64_t first = 0;
        for (int q = 0; q < rank; ++q) first += tensors[k].counts[static_cast<size_t>(q)];
        const int64_t mine = tensors[k].counts[static_cast<size_t>(rank)];
        std::vector<double> got(static_cast<size_t>(mine));
        CHECK_CUDA(cudaMemcpy(got.data(), recvs[k], got.size() * 8, cudaMemcpyDeviceToHost));
        for (int64_t i = 0; i < mine; ++i) {
          // Average over ranks of ((g + k) % 4 + r), times 2 then 0.5.
          const double want = static_cast<double>((first + i + static_cast<int64_t>(k)) % 4) + (size - 1) / 2.0;
          if (got[static_cast<size_t>(i)] != want) {
            std::fprintf(stderr, "reducescatter tensor %zu element %lld: %g, expected %g\n", k,
                         static_cast<long long>(i), got[static_cast<size_t>(i)], want);
            return 1;
          }
        }
      }
      std::vector<DeviceScatterTensor> one = {tensors[4]};
      CHECK_OK(engine->reducescatter(one, HVD_FLOAT64, HVD_OP_SUM, 1.0, 1.0, comm));
      CHECK_OK(engine->finish(&done));
      CHECK_OK(done.synchronize());
      int64_t first = 0;
      for (int q = 0; q < rank; ++q) first += one[0].counts[static_cast<size_t>(q)];
      std::vector<double> got(static_cast<size_t>(one[0].counts[static_cast<size_t>(rank)]));
      CHECK_CUDA(cudaMemcpy(got.data(), recvs[4], got.size() * 8, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < got.size(); ++i)
        CHECK(got[i] == size * static_cast<double>((first + static_cast<int64_t>(i) + 4) % 4) +
                            size * (size - 1) / 2.0);
      for (size_t k = 0; k < sends.size(); ++k) {
        cudaFree(sends[k]);
        if (recvs[k] != sends[k]) cudaFree(recvs[k]);
      }
    }
    engine.reset();
    MPI_Comm_free(&world->comm);
  }
  mpi_types_free();
  if (rank == 0) std::printf("gpu-engine: ok on %d rank(s)\n", size);
  MPI_Finalize();
  return 0;
}
