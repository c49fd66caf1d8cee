#include "negotiate/response_cache.h"

#include <atomic>

namespace hvd {

namespace {
// Versions of cached responses, unique across every cache of the process (a cache
// made again, when it is switched off and on, must not repeat an earlier one's).
uint64_t next_version() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}
}  // namespace

TensorSpec Response::spec_for(int set_rank, int set_size) const {
  TensorSpec s = spec;
  if (spec.op == OpType::Allgather && !s.shape.empty() &&
      static_cast<size_t>(set_rank) < per_rank.size())
    s.shape[0] = per_rank[set_rank];
  if (spec.op == OpType::Alltoall &&
      per_rank.size() == static_cast<size_t>(set_size) * set_size) {
    s.splits.assign(per_rank.begin() + static_cast<ptrdiff_t>(set_rank) * set_size,
                    per_rank.begin() + static_cast<ptrdiff_t>(set_rank + 1) * set_size);
    int64_t rows = 0;
    for (int64_t x : s.splits) rows += x;
    if (!s.shape.empty()) s.shape[0] = rows;
  }
  return s;
}

ResponseCache::ResponseCache(size_t capacity)
    : slots_(capacity),
      used_((capacity + 63) / 64, 0),
      other_set_((capacity + 63) / 64, 0),
      lru_pos_(capacity) {
  for (size_t i = capacity; i > 0; --i) free_.push_back(static_cast<int>(i - 1));
}

int ResponseCache::find(std::string_view key, size_t key_hash) const {
  auto it = index_.find(TensorKeyRef(key, key_hash));
  return it == index_.end() ? -1 : it->second;
}

int ResponseCache::put(const Response& response, std::string* evicted_key) {
  if (capacity() == 0) return -1;
  const TensorKeyRef key(response.key, response.key_hash);
  int slot = find(key.str, key.hash);
  if (slot >= 0) {
    slots_[slot] = response;
    slots_[slot].key_hash = key.hash;
    slots_[slot].cache_slot = slot;
    slots_[slot].version = next_version();
    touch(slot);
    return slot;
  }
  if (free_.empty()) {
    int victim = lru_.back();
    if (evicted_key) *evicted_key = slots_[victim].key;
    erase(victim);
  }
  slot = free_.back();
  free_.pop_back();
  slots_[slot] = response;
  slots_[slot].key_hash = key.hash;
  slots_[slot].cache_slot = slot;
  slots_[slot].version = next_version();
  used_[slot / 64] |= uint64_t{1} << (slot % 64);
  if (response.spec.process_set != 0) other_set_[slot / 64] |= uint64_t{1} << (slot % 64);
  index_.emplace(TensorKey{response.key, key.hash}, slot);
  lru_.push_front(slot);
  lru_pos_[slot] = lru_.begin();
  return slot;
}

void ResponseCache::touch(int slot) {
  lru_.splice(lru_.begin(), lru_, lru_pos_[slot]);
}

void ResponseCache::erase(int slot) {
  if (!occupied(slot)) return;
  auto it = index_.find(TensorKeyRef(slots_[slot].key, slots_[slot].key_hash));
  if (it != index_.end()) index_.erase(it);
  lru_.erase(lru_pos_[slot]);
  used_[slot / 64] &= ~(uint64_t{1} << (slot % 64));
  other_set_[slot / 64] &= ~(uint64_t{1} << (slot % 64));
  slots_[slot] = Response{};
  free_.push_back(slot);
}

}  // namespace hvd
