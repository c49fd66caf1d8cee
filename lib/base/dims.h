// A tensor's dimensions: a few int64 values kept inline, so that copying or moving a
// request or a response of an ordinary tensor allocates nothing (an allreduce has one
// dimension; a heap vector per tensor was a measurable share of a small tensor's
// cost). Longer shapes spill to the heap. The interface is the part of std::vector
// the library uses.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <utility>
#include <vector>

namespace hvd {

class Dims {
 public:
  static constexpr size_t kInline = 4;

  Dims() = default;
  Dims(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  template <typename It>
  Dims(It first, It last) {
    assign(first, last);
  }
  Dims(const Dims& other) { assign(other.begin(), other.end()); }
  // Moves touch the heap vector only when a side uses it: every request and response
  // is moved on its way through the background thread, almost always with one
  // dimension inline.
  Dims(Dims&& other) noexcept : size_(other.size_) {
    if (size_ > kInline)
      heap_ = std::move(other.heap_);
    else  // all of them: a fixed 32 bytes is two moves, a copy of size_ a memmove call
      std::memcpy(inline_, other.inline_, sizeof inline_);
    other.size_ = 0;
  }
  Dims& operator=(Dims&& other) noexcept {
    if (this == &other) return *this;
    if (other.size_ > kInline) {
      heap_ = std::move(other.heap_);
      other.heap_.clear();
    } else {
      if (size_ > kInline) heap_.clear();
      std::memcpy(inline_, other.inline_, sizeof inline_);
    }
    size_ = other.size_;
    other.size_ = 0;
    return *this;
  }
  Dims& operator=(const Dims& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  Dims& operator=(std::initializer_list<int64_t> values) {
    assign(values.begin(), values.end());
    return *this;
  }

  template <typename It>
  void assign(It first, It last) {
    resize(static_cast<size_t>(std::distance(first, last)));
    std::copy(first, last, data());
  }
  void assign(size_t n, int64_t value) {
    resize(n);
    std::fill(begin(), end(), value);
  }
  void resize(size_t n) {
    if (n > kInline) {
      if (size_ <= kInline) heap_.assign(inline_, inline_ + size_);
      heap_.resize(n);
    } else if (size_ > kInline) {
      std::copy(heap_.begin(), heap_.begin() + static_cast<std::ptrdiff_t>(n), inline_);
      heap_.clear();
    } else {
      for (size_t i = size_; i < n; ++i) inline_[i] = 0;
    }
    size_ = n;
  }
  void clear() { resize(0); }
  void push_back(int64_t value) {
    resize(size_ + 1);
    data()[size_ - 1] = value;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return size_ > kInline ? heap_.data() : inline_; }
  const int64_t* data() const { return size_ > kInline ? heap_.data() : inline_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }

  bool operator==(const Dims& other) const {
    return size_ == other.size_ && std::equal(begin(), end(), other.begin());
  }

 private:
  size_t size_ = 0;
  int64_t inline_[kInline] = {};
  std::vector<int64_t> heap_;  // used only above kInline values
};

}  // namespace hvd
