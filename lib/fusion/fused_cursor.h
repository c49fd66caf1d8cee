// Walks the tensors of a fused buffer in order, for work done one range of the
// buffer at a time (staged pieces): which part of which tensor each range holds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace hvd {

class FusedCursor {
 public:
  // counts[k]: elements of tensor k, laid out back to back in this order.
  explicit FusedCursor(std::span<const int64_t> counts) : counts_(counts) {}

  // Calls part(k, first, n, at) for each part of a tensor inside elements
  // [offset, offset + count) of the buffer: n elements of tensor k from its element
  // `first`, at element `at` of the range. Ranges must come in increasing order.
  template <typename Part>
  void visit(int64_t offset, int64_t count, Part&& part) {
    while (k_ < counts_.size() && start_ + counts_[k_] <= offset) {
      start_ += counts_[k_];
      ++k_;
    }
    const int64_t end = offset + count;
    size_t k = k_;
    int64_t start = start_;
    for (int64_t pos = offset; pos < end && k < counts_.size();) {
      const int64_t first = pos - start;
      const int64_t n = std::min(counts_[k] - first, end - pos);
      if (n > 0) part(k, first, n, pos - offset);
      pos += n;
      if (first + n < counts_[k]) break;  // the range ends inside tensor k
      start += counts_[k];
      ++k;
    }
  }

 private:
  std::span<const int64_t> counts_;
  size_t k_ = 0;       // first tensor not wholly before the last range
  int64_t start_ = 0;  // its first element in the buffer
};

// The same walk for ranges in any order (a ring visits its segments round the ring):
// each range finds its first tensor by binary search over the tensors' starts.
class FusedIndex {
 public:
  // counts[k]: elements of tensor k, laid out back to back in this order.
  void assign(std::span<const int64_t> counts) {
    starts_.resize(counts.size() + 1);
    starts_[0] = 0;
    for (size_t k = 0; k < counts.size(); ++k) starts_[k + 1] = starts_[k] + counts[k];
  }

  // As FusedCursor::visit.
  template <typename Part>
  void visit(int64_t offset, int64_t count, Part&& part) const {
    const size_t tensors = starts_.size() - 1;
    size_t k = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) -
                                   starts_.begin()) - 1;
    const int64_t end = offset + count;
    for (int64_t pos = offset; pos < end && k < tensors; ++k) {
      const int64_t n = std::min(starts_[k + 1], end) - pos;
      if (n > 0) part(k, pos - starts_[k], n, pos - offset);
      pos += std::max<int64_t>(n, 0);
    }
  }

 private:
  std::vector<int64_t> starts_{0};
};

}  // namespace hvd
