#include "tensor_set.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include <hvd/hvd.h>

namespace hvdbench {

namespace {
// Inputs repeat with this period along (tensor + element), shifted per rank.
constexpr int kPeriod = 8;
}  // namespace

void TensorSet::Release::operator()(float* p) const { hvd_free(p); }

// hvd_free releases memory from either allocator (both are malloc's).
TensorSet::Floats TensorSet::allocate(int64_t elements) const {
  const size_t bytes = static_cast<size_t>(elements) * sizeof(float);
  void* memory = nullptr;
  if (huge_pages_) {
    if (hvd_alloc_host(bytes, &memory) != HVD_SUCCESS) throw std::bad_alloc();
  } else if (!(memory = std::malloc(bytes ? bytes : 1))) {
    throw std::bad_alloc();
  }
  return Floats(static_cast<float*>(memory));
}

TensorSet::TensorSet(const std::vector<int64_t>& counts, int rank, int size, bool with_packed,
                     bool contiguous, bool huge_pages)
    : counts_(counts), contiguous_(contiguous && !counts.empty()), huge_pages_(huge_pages),
      rank_(rank) {
  for (int64_t c : counts) total_ += c;
  if (contiguous_) {
    // In the order the step submits them (the last tensor first, as a backward pass
    // produces gradients), so that a fused batch finds them back to back.
    storage_.push_back(allocate(total_));
    data_.resize(counts.size());
    float* at = storage_.back().get();
    for (size_t t = counts.size(); t-- > 0;) {
      data_[t] = at;
      at += counts[t];
    }
  } else {
    storage_.reserve(counts.size());
    for (int64_t c : counts) {
      storage_.push_back(allocate(c));
      data_.push_back(storage_.back().get());
    }
  }
  if (with_packed) packed_ = allocate(total_);
  // Every page in place before the first repetition, as the vectors' zeros were.
  fill_tensors();
  if (packed_) std::memset(packed_.get(), 0, static_cast<size_t>(total_) * sizeof(float));
  for (int p = 0; p < kPeriod; ++p) {
    double sum = 0;
    for (int r = 0; r < size; ++r) sum += input(r, 0, p);
    sums_[p] = sum;
  }
}

float TensorSet::input(int rank, size_t t, int64_t i) const {
  return static_cast<float>(1 + (3 * rank + static_cast<int64_t>(t) + i) % kPeriod);
}

double TensorSet::expected(size_t t, int64_t i) const {
  return sums_[(static_cast<int64_t>(t) + i) % kPeriod];
}

void TensorSet::fill_tensors() {
  for (size_t t = 0; t < data_.size(); ++t)
    for (int64_t i = 0; i < counts_[t]; ++i) data_[t][i] = input(rank_, t, i);
}

void TensorSet::fill_packed() {
  if (contiguous_) return fill_tensors();  // packed() is the tensors' own allocation
  float* out = packed_.get();
  for (size_t t = 0; t < data_.size(); ++t) {
    int64_t n = elements(t);
    for (int64_t i = 0; i < n; ++i) *out++ = input(rank_, t, i);
  }
}

int64_t TensorSet::wrong_in(const float* data, size_t t, double factor) const {
  int64_t wrong = 0;
  int64_t n = elements(t);
  for (int64_t i = 0; i < n; ++i) {
    double want = expected(t, i) * factor;
    if (std::fabs(data[i] - want) > 1e-6 * std::fabs(want)) ++wrong;
  }
  return wrong;
}

int64_t TensorSet::wrong_in_tensors(double factor) const {
  int64_t wrong = 0;
  for (size_t t = 0; t < data_.size(); ++t) wrong += wrong_in(data_[t], t, factor);
  return wrong;
}

int64_t TensorSet::wrong_in_packed(double factor) const {
  if (contiguous_) return wrong_in_tensors(factor);
  int64_t wrong = 0;
  const float* data = packed_.get();
  for (size_t t = 0; t < data_.size(); ++t) {
    wrong += wrong_in(data, t, factor);
    data += elements(t);
  }
  return wrong;
}

}  // namespace hvdbench
