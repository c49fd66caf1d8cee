// Tensor keys (process set and name, as TensorQueue::key_of makes them) with their
// hash computed once. A tensor's key is looked up in several maps on its way through
// the runtime (names in flight, pending requests, the response cache, step
// detection); hashing a long name each time was a measurable share of a small
// tensor's cost, so the hash is computed at enqueue and carried with the request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace hvd {

// Never 0: 0 stands for "not computed" in the structures that carry a hash.
// Multiply and shift, 8 bytes at a time: a 40-byte name costs about a third of
// std::hash's instructions. Keys are the job's own tensor names, so no adversary
// picks collisions.
inline size_t hash_key(std::string_view key) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  const char* p = key.data();
  size_t n = key.size();
  uint64_t h = (n + 1) * kMul;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  h ^= h >> 32;
  return h ? static_cast<size_t>(h) : 1;
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

// Keys that carry their hash compare it first: a map's bucket chain then rejects
// other keys without reading their strings (a cache miss each, for names longer than
// a std::string holds inline, when a step's tensors have pushed the maps out of cache).
struct TensorKeyEqual {
  using is_transparent = void;
  static std::string_view view(const TensorKey& k) { return k.str; }
  static std::string_view view(const TensorKeyRef& k) { return k.str; }
  static std::string_view view(std::string_view s) { return s; }
  static size_t hash_of(const TensorKey& k) { return k.hash; }
  static size_t hash_of(const TensorKeyRef& k) { return k.hash; }
  static size_t hash_of(std::string_view) { return 0; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const noexcept {
    const size_t ha = hash_of(a), hb = hash_of(b);
    if (ha != 0 && hb != 0 && ha != hb) return false;
    return view(a) == view(b);
  }
};

}  // namespace hvd
