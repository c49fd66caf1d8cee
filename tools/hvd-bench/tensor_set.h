// The gradients of one step: float32 tensors allocated one by one, as a framework
// holds its parameters (or, contiguous, back to back in one allocation in the order
// a step submits them, as in a flat gradient buffer laid out in backward order), and
// (for the references that copy, and for the packed ones unless the tensors are
// contiguous) the same elements back to back in a buffer of their own.
// Inputs are small non-zero integers that differ per rank and
// per element, so every sum is exact and a misplaced or missing element shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace hvdbench {

class TensorSet {
 public:
  // huge_pages: every buffer from hvd_alloc_host (2 MiB pages from 1 MiB up), else
  // from malloc, as a framework's allocator would.
  TensorSet(const std::vector<int64_t>& counts, int rank, int size, bool with_packed,
            bool contiguous, bool huge_pages);

  size_t count() const { return data_.size(); }
  int64_t elements(size_t t) const { return counts_[t]; }
  int64_t total_elements() const { return total_; }
  int64_t total_bytes() const { return total_ * static_cast<int64_t>(sizeof(float)); }
  float* tensor(size_t t) { return data_[t]; }
  // Every element back to back, for the packed references (the limit): the tensors'
  // own allocation when they are contiguous (the limit then reduces the very memory
  // libhvd does: measured, a buffer of its own ran up to 15% faster over shared
  // memory than the same calls on the tensors' buffer), else a buffer of its own.
  float* packed() { return contiguous_ ? data_.back() : packed_.get(); }
  // A buffer of its own, the copy target of the references that copy (fused copies,
  // hybrid).
  float* staging() { return packed_.get(); }

  // Restore this rank's inputs.
  void fill_tensors();
  void fill_packed();

  // Elements that differ from the sum over ranks times factor (factor = size^(k-1)
  // after k in-place sums of the same buffers).
  int64_t wrong_in_tensors(double factor) const;
  int64_t wrong_in_packed(double factor) const;

 private:
  float input(int rank, size_t t, int64_t i) const;
  double expected(size_t t, int64_t i) const;
  int64_t wrong_in(const float* data, size_t t, double factor) const;

  struct Release {
    void operator()(float* p) const;
  };
  using Floats = std::unique_ptr<float[], Release>;
  Floats allocate(int64_t elements) const;

  std::vector<Floats> storage_;  // one per tensor, or one for all
  std::vector<float*> data_;     // each tensor's elements
  std::vector<int64_t> counts_;
  Floats packed_;
  bool contiguous_ = false;
  bool huge_pages_ = false;
  int64_t total_ = 0;
  int rank_;
  double sums_[8];  // the sum over ranks of each of the 8 input patterns
};

}  // namespace hvdbench
