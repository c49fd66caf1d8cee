// Broadcast, allgather and alltoall in the sweep: collectives that move data
// without reducing it.
#include <mpi.h>

#include "sweep_case.h"

namespace hvdbench {

namespace {

constexpr double kUnwritten = 0;  // inputs are at least 1

// Hands libhvd the preallocated output, so the sweep times the collective rather
// than an allocation of the output on every call.
struct Preallocated {
  void* data;
  size_t capacity;
};

void* give_preallocated(size_t nbytes, int, void* user_data) {
  auto* p = static_cast<Preallocated*>(user_data);
  return nbytes <= p->capacity ? p->data : nullptr;
}

class BroadcastCase : public SweepCase {
 public:
  using SweepCase::SweepCase;
  const char* name() const override { return "broadcast"; }
  bool uses_root() const override { return true; }
  // libhvd's broadcast works on one buffer.
  bool has_out_of_place() const override { return false; }
  double bus_factor() const override { return 1; }

  int64_t prepare(int64_t bytes) override {
    count_ = bytes / static_cast<int64_t>(s_.dtype->size);
    buffer_.resize(s_.dtype, count_);
    return count_;
  }

  // The root holds 1..5; the others hold 6..10 until the root's values arrive.
  void fill(bool) override {
    for (int64_t i = 0; i < count_; ++i)
      buffer_.set(i, s_.rank == s_.root ? input(s_.root, i) : 5 + input(s_.rank, i));
  }

  hvd_status_t run_libhvd(bool in_place) override {
    return hvd_broadcast(buffer_.data(), count_, s_.dtype->hvd, s_.root,
                         tensor_name(in_place, count_).c_str());
  }

  bool run_mpi(bool) override {
    if (s_.dtype->mpi == MPI_DATATYPE_NULL) return false;
    MPI_Bcast(buffer_.data(), static_cast<int>(count_), s_.dtype->mpi, s_.root, MPI_COMM_WORLD);
    return true;
  }

  int64_t wrong(bool) const override {
    int64_t n = 0;
    for (int64_t i = 0; i < count_; ++i) n += !matches(buffer_.data(), i, input(s_.root, i));
    return n;
  }

 private:
  int64_t count_ = 0;
  TypedBuffer buffer_;
};

class AllgatherCase : public SweepCase {
 public:
  using SweepCase::SweepCase;
  const char* name() const override { return "allgather"; }
  // The output is allocated for the caller; nccl-tests' in-place layout (the input
  // inside the output) is not part of libhvd's API.
  bool has_in_place() const override { return false; }
  double bus_factor() const override { return static_cast<double>(s_.size - 1) / s_.size; }

  int64_t prepare(int64_t bytes) override {
    block_ = bytes / static_cast<int64_t>(s_.dtype->size) / s_.size;
    ok_ = true;
    send_.resize(s_.dtype, block_);
    recv_.resize(s_.dtype, block_ * s_.size);
    for (int64_t i = 0; i < block_; ++i) send_.set(i, input(s_.rank, i));
    out_ = {recv_.data(), static_cast<size_t>(block_ * s_.size) * s_.dtype->size};
    hvd_op_options_init(&options_);
    options_.allocator = give_preallocated;
    options_.allocator_user_data = &out_;
    return block_ * s_.size;
  }

  void fill(bool) override {
    for (int64_t i = 0; i < recv_.count(); ++i) recv_.set(i, kUnwritten);
  }

  hvd_status_t run_libhvd(bool in_place) override {
    int64_t shape[1] = {block_};
    void* result = nullptr;
    int64_t rows = 0;
    hvd_status_t status = hvd_allgather(send_.data(), 1, shape, s_.dtype->hvd, &result, &rows,
                                        nullptr, tensor_name(in_place, block_).c_str(), &options_);
    if (status == HVD_SUCCESS && (result != recv_.data() || rows != recv_.count()))
      ok_ = false;  // counted as wrong: the output is not where or what it should be
    return status;
  }

  bool run_mpi(bool) override {
    if (s_.dtype->mpi == MPI_DATATYPE_NULL) return false;
    MPI_Allgather(send_.data(), static_cast<int>(block_), s_.dtype->mpi, recv_.data(),
                  static_cast<int>(block_), s_.dtype->mpi, MPI_COMM_WORLD);
    return true;
  }

  int64_t wrong(bool) const override {
    if (!ok_) return recv_.count();
    int64_t n = 0;
    for (int r = 0; r < s_.size; ++r)
      for (int64_t i = 0; i < block_; ++i)
        n += !matches(recv_.data(), r * block_ + i, input(r, i));
    return n;
  }

 private:
  int64_t block_ = 0;
  TypedBuffer send_, recv_;
  Preallocated out_{};
  hvd_op_options_t options_{};
  bool ok_ = true;
};

class AlltoallCase : public SweepCase {
 public:
  using SweepCase::SweepCase;
  const char* name() const override { return "alltoall"; }
  bool has_in_place() const override { return false; }
  double bus_factor() const override { return static_cast<double>(s_.size - 1) / s_.size; }

  int64_t prepare(int64_t bytes) override {
    block_ = bytes / static_cast<int64_t>(s_.dtype->size) / s_.size;
    const int64_t count = block_ * s_.size;
    ok_ = true;
    send_.resize(s_.dtype, count);
    recv_.resize(s_.dtype, count);
    for (int p = 0; p < s_.size; ++p)
      for (int64_t i = 0; i < block_; ++i) send_.set(p * block_ + i, value(s_.rank, p, i));
    out_ = {recv_.data(), static_cast<size_t>(count) * s_.dtype->size};
    hvd_op_options_init(&options_);
    options_.allocator = give_preallocated;
    options_.allocator_user_data = &out_;
    return count;
  }

  void fill(bool) override {
    for (int64_t i = 0; i < recv_.count(); ++i) recv_.set(i, kUnwritten);
  }

  hvd_status_t run_libhvd(bool in_place) override {
    int64_t shape[1] = {recv_.count()};
    void* result = nullptr;
    int64_t rows = 0;
    hvd_status_t status =
        hvd_alltoall(send_.data(), 1, shape, s_.dtype->hvd, nullptr, &result, &rows, nullptr,
                     tensor_name(in_place, recv_.count()).c_str(), &options_);
    if (status == HVD_SUCCESS && (result != recv_.data() || rows != recv_.count())) ok_ = false;
    return status;
  }

  bool run_mpi(bool) override {
    if (s_.dtype->mpi == MPI_DATATYPE_NULL) return false;
    MPI_Alltoall(send_.data(), static_cast<int>(block_), s_.dtype->mpi, recv_.data(),
                 static_cast<int>(block_), s_.dtype->mpi, MPI_COMM_WORLD);
    return true;
  }

  int64_t wrong(bool) const override {
    if (!ok_) return recv_.count();
    int64_t n = 0;
    for (int src = 0; src < s_.size; ++src)
      for (int64_t i = 0; i < block_; ++i)
        n += !matches(recv_.data(), src * block_ + i, value(src, s_.rank, i));
    return n;
  }

 private:
  // What rank `from` sends to rank `to` at element i of the block.
  double value(int from, int to, int64_t i) const { return 1 + (2 * from + to + i) % 7; }

  int64_t block_ = 0;
  TypedBuffer send_, recv_;
  Preallocated out_{};
  hvd_op_options_t options_{};
  bool ok_ = true;
};

}  // namespace

std::unique_ptr<SweepCase> make_broadcast_case(const SweepSetting& s) {
  return std::make_unique<BroadcastCase>(s);
}
std::unique_ptr<SweepCase> make_allgather_case(const SweepSetting& s) {
  return std::make_unique<AllgatherCase>(s);
}
std::unique_ptr<SweepCase> make_alltoall_case(const SweepSetting& s) {
  return std::make_unique<AlltoallCase>(s);
}

}  // namespace hvdbench
