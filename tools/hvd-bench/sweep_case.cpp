#include "sweep_case.h"

#include <cmath>

namespace hvdbench {

void TypedBuffer::resize(const Dtype* dtype, int64_t count) {
  dtype_ = dtype;
  count_ = count;
  bytes_.assign(static_cast<size_t>(count) * dtype->size, 0);
}

double SweepCase::reduced(int64_t i) const {
  if (s_.redop == "adasum") return (s_.size + 1) / 2.0 * (1.0 + static_cast<double>(i % 5));
  double acc = input(0, i);
  for (int r = 1; r < s_.size; ++r) {
    double v = input(r, i);
    if (s_.redop == "prod") acc *= v;
    else if (s_.redop == "min") acc = std::fmin(acc, v);
    else if (s_.redop == "max") acc = std::fmax(acc, v);
    else acc += v;
  }
  if (s_.redop == "avg") {
    acc /= s_.size;
    if (!s_.dtype->is_float) acc = std::trunc(acc);
  }
  return acc;
}

bool SweepCase::matches(const void* data, size_t index, double want) const {
  // Round the expected value as the type stores it.
  unsigned char slot[16];
  s_.dtype->store(slot, 0, want);
  want = s_.dtype->load(slot, 0);
  double got = s_.dtype->load(data, index);
  if (!s_.dtype->is_float) return got == want;
  double tolerance = s_.dtype->size == 2 ? 1e-2 : s_.dtype->size == 4 ? 1e-5 : 1e-12;
  return std::fabs(got - want) <= tolerance * std::fmax(1.0, std::fabs(want));
}

std::string SweepCase::tensor_name(bool in_place, int64_t count) const {
  return std::string("hvd-bench.") + name() + (in_place ? ".in-place." : ".out-of-place.") +
         std::to_string(count);
}

hvd_reduce_op_t hvd_redop(const std::string& redop) {
  if (redop == "prod") return HVD_OP_PRODUCT;
  if (redop == "min") return HVD_OP_MIN;
  if (redop == "max") return HVD_OP_MAX;
  if (redop == "avg") return HVD_OP_AVERAGE;
  if (redop == "adasum") return HVD_OP_ADASUM;
  return HVD_OP_SUM;
}

MPI_Op mpi_redop(const std::string& redop) {
  if (redop == "prod") return MPI_PROD;
  if (redop == "min") return MPI_MIN;
  if (redop == "max") return MPI_MAX;
  if (redop == "avg") return MPI_OP_NULL;
  return MPI_SUM;  // adasum too: see SweepCase::run_mpi
}

std::unique_ptr<SweepCase> make_sweep_case(const std::string& collective, const SweepSetting& s) {
  if (collective == "allreduce") return make_allreduce_case(s);
  if (collective == "reducescatter") return make_reducescatter_case(s);
  if (collective == "broadcast") return make_broadcast_case(s);
  if (collective == "allgather") return make_allgather_case(s);
  if (collective == "alltoall") return make_alltoall_case(s);
  return nullptr;
}

}  // namespace hvdbench
