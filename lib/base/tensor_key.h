// Tensor keys (process set and name, as TensorQueue::key_of makes them) with their
// hash computed once. A tensor's key is looked up in several maps on its way through
// the runtime (names in flight, pending requests, the response cache, step
// detection); hashing a long name each time was a measurable share of a small
// tensor's cost, so the hash is computed at enqueue and carried with the request.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace hvd {

// Never 0: 0 stands for "not computed" in the structures that carry a hash.
inline size_t hash_key(std::string_view key) {
  const size_t h = std::hash<std::string_view>{}(key);
  return h ? h : 1;
}

// A key held by a map, with its hash.
struct TensorKey {
  std::string str;
  size_t hash = 0;
};

// A key looked up, with its hash (0: computed here).
struct TensorKeyRef {
  TensorKeyRef(std::string_view s, size_t h) : str(s), hash(h ? h : hash_key(s)) {}
  std::string_view str;
  size_t hash;
};

// Hash and equality for unordered containers of TensorKey. Lookups take a
// TensorKeyRef (no hashing) or any string (hashed).
struct TensorKeyHash {
  using is_transparent = void;
  size_t operator()(const TensorKey& k) const noexcept { return k.hash; }
  size_t operator()(const TensorKeyRef& k) const noexcept { return k.hash; }
  size_t operator()(std::string_view s) const noexcept { return hash_key(s); }
};

struct TensorKeyEqual {
  using is_transparent = void;
  static std::string_view view(const TensorKey& k) { return k.str; }
  static std::string_view view(const TensorKeyRef& k) { return k.str; }
  static std::string_view view(std::string_view s) { return s; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const noexcept {
    return view(a) == view(b);
  }
};

}  // namespace hvd
