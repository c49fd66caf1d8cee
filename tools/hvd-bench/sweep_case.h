// One collective of the sweep: its buffers for one size, its libhvd and MPI calls,
// and the check of its result. Sizes follow nccl-tests: `bytes` is the whole
// message (allgather: the gathered output; reducescatter and alltoall: the input).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <hvd/hvd.h>

#include "dtypes.h"

namespace hvdbench {

struct SweepSetting {
  const Dtype* dtype;
  std::string redop;  // sum, prod, min, max, avg, adasum
  int root;
  int rank;
  int size;
};

class SweepCase {
 public:
  explicit SweepCase(const SweepSetting& s) : s_(s) {}
  virtual ~SweepCase() = default;

  virtual const char* name() const = 0;
  virtual bool has_out_of_place() const { return true; }
  virtual bool has_in_place() const { return true; }
  virtual bool uses_redop() const { return false; }
  virtual bool uses_root() const { return false; }
  // busbw = algbw x this (nccl-tests' bus bandwidth).
  virtual double bus_factor() const = 0;

  // Sets up buffers for about `bytes` bytes; returns the element count nccl-tests
  // would print (0 when the size is too small for this collective).
  virtual int64_t prepare(int64_t bytes) = 0;
  // Restores inputs, and marks outputs so a result that never arrives shows.
  virtual void fill(bool in_place) = 0;
  virtual hvd_status_t run_libhvd(bool in_place) = 0;
  // false when MPI has no counterpart (16-bit floats, average). Adasum, which has
  // none either, is measured against MPI_SUM on the same bytes: what it costs beyond
  // a plain sum.
  virtual bool run_mpi(bool in_place) = 0;
  virtual int64_t wrong(bool in_place) const = 0;

 protected:
  // Inputs: small non-zero integers, different per rank and element. For Adasum, a
  // multiple of one vector per rank (rank + 1 times it), whose Adasum is the mean of
  // the multiples times the vector: a result checkable element by element.
  double input(int rank, int64_t i) const {
    return s_.redop == "adasum" ? (rank + 1) * (1.0 + static_cast<double>(i % 5)) : 1 + (rank + i) % 5;
  }
  // The reduction over ranks of input(*, i).
  double reduced(int64_t i) const;
  // Compares a stored element with a value, allowing for the type's rounding.
  bool matches(const void* data, size_t index, double want) const;
  std::string tensor_name(bool in_place, int64_t count) const;

  SweepSetting s_;
};

std::unique_ptr<SweepCase> make_sweep_case(const std::string& collective, const SweepSetting& s);

// A buffer of the sweep's element type.
class TypedBuffer {
 public:
  void resize(const Dtype* dtype, int64_t count);
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  int64_t count() const { return count_; }
  void set(int64_t i, double v) { dtype_->store(bytes_.data(), static_cast<size_t>(i), v); }

 private:
  const Dtype* dtype_ = nullptr;
  std::vector<unsigned char> bytes_;
  int64_t count_ = 0;
};

}  // namespace hvdbench

namespace hvdbench {

std::unique_ptr<SweepCase> make_allreduce_case(const SweepSetting& s);
std::unique_ptr<SweepCase> make_reducescatter_case(const SweepSetting& s);
std::unique_ptr<SweepCase> make_broadcast_case(const SweepSetting& s);
std::unique_ptr<SweepCase> make_allgather_case(const SweepSetting& s);
std::unique_ptr<SweepCase> make_alltoall_case(const SweepSetting& s);

// libhvd and MPI names of the reduction; MPI_OP_NULL for average, which MPI lacks.
hvd_reduce_op_t hvd_redop(const std::string& redop);
MPI_Op mpi_redop(const std::string& redop);

}  // namespace hvdbench
