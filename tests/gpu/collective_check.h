// Runs every collective of a device Backend (NCCL or host-staged) on device memory
// and compares with results computed on the host from every rank's inputs, which
// each rank regenerates from the same seeds.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>

#include "gpu_test_util.h"
#include "ops/backend.h"
#include "ops/device/device_context.h"

namespace hvd_test {

using hvd::Backend;
using hvd::DeviceContext;
using hvd::Communicator;

inline double element(const std::vector<unsigned char>& t, hvd_dtype_t dtype, int64_t i) {
  const unsigned char* p = t.data() + i * hvd::dtype_size(dtype);
  switch (dtype) {
    case HVD_UINT8: return *reinterpret_cast<const uint8_t*>(p);
    case HVD_INT8: return *reinterpret_cast<const int8_t*>(p);
    case HVD_UINT16: return *reinterpret_cast<const uint16_t*>(p);
    case HVD_INT16: return *reinterpret_cast<const int16_t*>(p);
    case HVD_INT32: return *reinterpret_cast<const int32_t*>(p);
    case HVD_INT64: return static_cast<double>(*reinterpret_cast<const int64_t*>(p));
    case HVD_FLOAT16: return hvd::half_to_float(*reinterpret_cast<const uint16_t*>(p));
    case HVD_BFLOAT16: return hvd::bf16_to_float(*reinterpret_cast<const uint16_t*>(p));
    case HVD_FLOAT32: return *reinterpret_cast<const float*>(p);
    case HVD_FLOAT64: return *reinterpret_cast<const double*>(p);
    case HVD_BOOL: return *p != 0;
  }
  return 0;
}

inline double reduce(double a, double b, hvd_reduce_op_t op, hvd_dtype_t dtype) {
  if (dtype == HVD_BOOL) {
    const bool x = a != 0, y = b != 0;
    return (op == HVD_OP_MIN || op == HVD_OP_PRODUCT) ? (x && y) : (x || y);
  }
  switch (op) {
    case HVD_OP_MIN: return a < b ? a : b;
    case HVD_OP_MAX: return a > b ? a : b;
    case HVD_OP_PRODUCT: return a * b;
    default: return a + b;
  }
}

inline uint32_t seed(int rank, int test, hvd_dtype_t dtype) {
  return static_cast<uint32_t>(rank * 1000003 + test * 101 + dtype);
}

inline void fail_at(const char* what, hvd_dtype_t dtype, int64_t i, double got, double want) {
  std::fprintf(stderr, "%s %s: element %lld is %g, expected %g\n", what, hvd::dtype_name(dtype),
               static_cast<long long>(i), got, want);
  std::exit(1);
}

// reduces: whether the backend can reduce dtype (NCCL cannot reduce 16-bit integers).
inline void check_collectives(Backend& backend, DeviceContext& ctx, const Communicator& comm,
                              const std::function<bool(hvd_dtype_t)>& reduces) {
  const int me = comm.rank, n = comm.size;
  auto finish = [&] {
    hvd::DeviceEvent done;
    CHECK_OK(ctx.record(&done));
    CHECK_OK(done.synchronize());
  };
  for (hvd_dtype_t dtype : kAllDtypes) {
    const size_t esize = hvd::dtype_size(dtype);
    if (reduces(dtype)) {
      for (hvd_reduce_op_t op : {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT}) {
        const int64_t count = 70001;
        auto mine = random_tensor(dtype, count, seed(me, op, dtype));
        void* d = to_device(mine);
        void* out = nullptr;
        CHECK_CUDA(cudaMalloc(&out, count * esize));
        CHECK_OK(backend.allreduce(d, out, count, dtype, op, comm));   // out of place
        CHECK_OK(backend.allreduce(d, d, count, dtype, op, comm));     // in place
        finish();
        auto got = to_host(out, count * esize), got2 = to_host(d, count * esize);
        CHECK(got == got2);
        for (int64_t i = 0; i < count; ++i) {
          double want = element(random_tensor(dtype, i + 1, seed(0, op, dtype)), dtype, i);
          for (int r = 1; r < n; ++r)
            want = reduce(want, element(random_tensor(dtype, i + 1, seed(r, op, dtype)), dtype, i), op, dtype);
          const double g = element(got, dtype, i);
          if (dtype == HVD_BOOL ? ((g != 0) != (want != 0)) : g != want) fail_at("allreduce", dtype, i, g, want);
          if (i > 300) i += 997;  // spot-check the rest: regenerating inputs is quadratic
        }
        cudaFree(d);
        cudaFree(out);
      }
      // reducescatter with unequal blocks (rank r gets r + 5 elements).
      std::vector<int64_t> counts;
      int64_t total = 0;
      for (int r = 0; r < n; ++r) counts.push_back(r + 5), total += r + 5;
      std::vector<std::vector<unsigned char>> inputs;
      for (int r = 0; r < n; ++r) inputs.push_back(random_tensor(dtype, total, seed(r, 50, dtype)));
      void* d = to_device(inputs[me]);
      void* out = nullptr;
      CHECK_CUDA(cudaMalloc(&out, counts[me] * esize));
      CHECK_OK(backend.reducescatter(d, out, counts, dtype, HVD_OP_SUM, comm));
      finish();
      auto got = to_host(out, counts[me] * esize);
      int64_t first = 0;
      for (int r = 0; r < me; ++r) first += counts[r];
      for (int64_t i = 0; i < counts[me]; ++i) {
        double want = 0;
        for (int r = 0; r < n; ++r) want = reduce(want, element(inputs[r], dtype, first + i), HVD_OP_SUM, dtype);
        const double g = element(got, dtype, i);
        if (dtype == HVD_BOOL ? ((g != 0) != (want != 0)) : g != want) fail_at("reducescatter", dtype, i, g, want);
      }
      cudaFree(d);
      cudaFree(out);
    }
    {  // broadcast from the last rank
      const int64_t count = 4097;
      const int root = n - 1;
      auto data = random_tensor(dtype, count, seed(root, 60, dtype));
      auto mine = me == root ? data : std::vector<unsigned char>(data.size(), 0);
      void* d = to_device(mine);
      CHECK_OK(backend.broadcast(d, count, dtype, root, comm));
      finish();
      CHECK(to_host(d, data.size()) == data);
      cudaFree(d);
    }
    {  // allgatherv: rank r contributes 2r + 1 elements
      std::vector<int64_t> counts, displs;
      int64_t total = 0;
      for (int r = 0; r < n; ++r) displs.push_back(total), counts.push_back(2 * r + 1), total += 2 * r + 1;
      std::vector<unsigned char> want;
      for (int r = 0; r < n; ++r) {
        auto block = random_tensor(dtype, counts[r], seed(r, 70, dtype));
        want.insert(want.end(), block.begin(), block.end());
      }
      void* send = to_device(random_tensor(dtype, counts[me], seed(me, 70, dtype)));
      void* recv = nullptr;
      CHECK_CUDA(cudaMalloc(&recv, std::max<int64_t>(total, 3 * n) * esize));  // also the equal blocks below
      CHECK_OK(backend.allgatherv(send, recv, counts, displs, dtype, comm));
      finish();
      CHECK(to_host(recv, want.size()) == want);
      // Equal blocks take NCCL's allgather path (each rank sends 3 elements of its own).
      std::vector<int64_t> eq(n, 3), eqd;
      std::vector<unsigned char> want_eq;
      for (int r = 0; r < n; ++r) {
        eqd.push_back(3 * r);
        auto block = random_tensor(dtype, 3, seed(r, 75, dtype));
        want_eq.insert(want_eq.end(), block.begin(), block.end());
      }
      void* send_eq = to_device(random_tensor(dtype, 3, seed(me, 75, dtype)));
      CHECK_OK(backend.allgatherv(send_eq, recv, eq, eqd, dtype, comm));
      finish();
      CHECK(to_host(recv, want_eq.size()) == want_eq);
      cudaFree(send_eq);
      cudaFree(send);
      cudaFree(recv);
    }
    {  // alltoallv: rank s sends s + r + 1 elements to rank r
      std::vector<int64_t> sc, sd, rc, rd;
      int64_t st = 0, rt = 0;
      for (int r = 0; r < n; ++r) {
        sd.push_back(st), sc.push_back(me + r + 1), st += me + r + 1;
        rd.push_back(rt), rc.push_back(r + me + 1), rt += r + me + 1;
      }
      auto mine = random_tensor(dtype, st, seed(me, 80, dtype));
      void* send = to_device(mine);
      void* recv = nullptr;
      CHECK_CUDA(cudaMalloc(&recv, rt * esize));
      // Rank s sends s + r + 1 elements to rank r: the most is 2n - 1.
      CHECK_OK(backend.alltoallv(send, sc, sd, recv, rc, rd, dtype, 2 * n - 1, comm));
      finish();
      auto got = to_host(recv, rt * esize);
      for (int s = 0; s < n; ++s) {
        auto theirs = random_tensor(dtype, 0, 0);
        int64_t sst = 0, off = 0;
        for (int r = 0; r < n; ++r) {
          if (r == me) off = sst;
          sst += s + r + 1;
        }
        theirs = random_tensor(dtype, sst, seed(s, 80, dtype));
        CHECK(std::memcmp(got.data() + rd[s] * esize, theirs.data() + off * esize, rc[s] * esize) == 0);
      }
      cudaFree(send);
      cudaFree(recv);
    }
  }
}

}  // namespace hvd_test
