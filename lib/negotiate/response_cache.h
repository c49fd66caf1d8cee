// The response cache: once a tensor has been negotiated, ranks refer to it by a slot
// id and agree on readiness through one bitwise AND instead of sending names. Every
// rank applies the same inserts, uses and evictions in the same order, so the caches
// stay identical without ever being compared.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/tensor_key.h"
#include "queue/response.h"

namespace hvd {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity);

  size_t capacity() const { return slots_.size(); }
  size_t size() const { return index_.size(); }

  // Slot of key, or -1. key_hash: hash_key(key), or 0 (computed here).
  int find(std::string_view key, size_t key_hash = 0) const;
  const Response& at(int slot) const { return slots_[slot]; }
  bool occupied(int slot) const { return used_[slot / 64] >> (slot % 64) & 1; }
  // Occupied slots as a bitmap, 64 per word (capacity rounded up): rounds scan it
  // a word at a time instead of testing a thousand slots one by one.
  const std::vector<uint64_t>& occupied_words() const { return used_; }
  // The occupied slots whose tensor is not in the global process set.
  const std::vector<uint64_t>& other_set_words() const { return other_set_; }

  // Inserts (or replaces) key; evicts the least recently used entry when full.
  // Returns the slot; *evicted_key gets the key that was evicted, if any (its slot is
  // the one returned).
  int put(const Response& response, std::string* evicted_key);
  void touch(int slot);
  void erase(int slot);

 private:
  std::vector<Response> slots_;
  std::vector<uint64_t> used_;
  std::vector<uint64_t> other_set_;
  std::unordered_map<TensorKey, int, TensorKeyHash, TensorKeyEqual> index_;
  std::list<int> lru_;  // front = most recent
  std::vector<std::list<int>::iterator> lru_pos_;
  std::vector<int> free_;
};

}  // namespace hvd
