// Allreduce and reducescatter in the sweep.
#include <mpi.h>

#include "sweep_case.h"

namespace hvdbench {

namespace {

// Sentinel for outputs: inputs are at least 1, so no reduction of them gives 0.
constexpr double kUnwritten = 0;

class AllreduceCase : public SweepCase {
 public:
  using SweepCase::SweepCase;
  const char* name() const override { return "allreduce"; }
  bool uses_redop() const override { return true; }
  double bus_factor() const override { return 2.0 * (s_.size - 1) / s_.size; }

  int64_t prepare(int64_t bytes) override {
    count_ = bytes / static_cast<int64_t>(s_.dtype->size);
    send_.resize(s_.dtype, count_);
    recv_.resize(s_.dtype, count_);
    for (int64_t i = 0; i < count_; ++i) send_.set(i, input(s_.rank, i));
    for (int p = 0; p < 5; ++p) expected_[p] = reduced(p);
    return count_;
  }

  void fill(bool in_place) override {
    for (int64_t i = 0; i < count_; ++i) recv_.set(i, in_place ? input(s_.rank, i) : kUnwritten);
  }

  hvd_status_t run_libhvd(bool in_place) override {
    return hvd_allreduce(in_place ? recv_.data() : send_.data(), recv_.data(), count_,
                         s_.dtype->hvd, hvd_redop(s_.redop), tensor_name(in_place, count_).c_str());
  }

  bool run_mpi(bool in_place) override {
    MPI_Op op = mpi_redop(s_.redop);
    if (s_.dtype->mpi == MPI_DATATYPE_NULL || op == MPI_OP_NULL) return false;
    MPI_Allreduce(in_place ? MPI_IN_PLACE : send_.data(), recv_.data(), static_cast<int>(count_),
                  s_.dtype->mpi, op, MPI_COMM_WORLD);
    return true;
  }

  int64_t wrong(bool) const override {
    int64_t n = 0;
    for (int64_t i = 0; i < count_; ++i) n += !matches(recv_.data(), i, expected_[i % 5]);
    return n;
  }

 private:
  int64_t count_ = 0;
  TypedBuffer send_, recv_;
  double expected_[5];
};

class ReducescatterCase : public SweepCase {
 public:
  using SweepCase::SweepCase;
  const char* name() const override { return "reducescatter"; }
  bool uses_redop() const override { return true; }
  // libhvd's reducescatter writes to a separate buffer; nccl-tests' in-place
  // layout (output inside the input) is not part of its API.
  bool has_in_place() const override { return false; }
  double bus_factor() const override { return static_cast<double>(s_.size - 1) / s_.size; }

  int64_t prepare(int64_t bytes) override {
    int64_t elements = bytes / static_cast<int64_t>(s_.dtype->size);
    block_ = elements / s_.size;
    count_ = block_ * s_.size;
    send_.resize(s_.dtype, count_);
    recv_.resize(s_.dtype, block_);
    for (int64_t i = 0; i < count_; ++i) send_.set(i, input(s_.rank, i));
    for (int p = 0; p < 5; ++p) expected_[p] = reduced(p);
    return block_ ? count_ : 0;
  }

  void fill(bool) override {
    for (int64_t i = 0; i < block_; ++i) recv_.set(i, kUnwritten);
  }

  hvd_status_t run_libhvd(bool in_place) override {
    int64_t shape[1] = {count_};
    return hvd_reducescatter(send_.data(), recv_.data(), 1, shape, s_.dtype->hvd,
                             hvd_redop(s_.redop), tensor_name(in_place, count_).c_str(), nullptr);
  }

  bool run_mpi(bool) override {
    MPI_Op op = mpi_redop(s_.redop);
    if (s_.dtype->mpi == MPI_DATATYPE_NULL || op == MPI_OP_NULL) return false;
    MPI_Reduce_scatter_block(send_.data(), recv_.data(), static_cast<int>(block_), s_.dtype->mpi,
                             op, MPI_COMM_WORLD);
    return true;
  }

  int64_t wrong(bool) const override {
    int64_t n = 0;
    const int64_t first = s_.rank * block_;
    for (int64_t i = 0; i < block_; ++i) n += !matches(recv_.data(), i, expected_[(first + i) % 5]);
    return n;
  }

 private:
  int64_t count_ = 0, block_ = 0;
  TypedBuffer send_, recv_;
  double expected_[5];
};

}  // namespace

std::unique_ptr<SweepCase> make_allreduce_case(const SweepSetting& s) {
  return std::make_unique<AllreduceCase>(s);
}
std::unique_ptr<SweepCase> make_reducescatter_case(const SweepSetting& s) {
  return std::make_unique<ReducescatterCase>(s);
}

}  // namespace hvdbench
