// The Controller's bit vector and response cache (controller.h: the layout): which
// cached slots this rank is ready for, the flags every rank ANDs, and what the ANDed
// vector says; a response's place in the cache once negotiated by name.
#include "negotiate/controller.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "base/log.h"
#include "queue/name_table.h"
#include "queue/tensor_queue.h"

namespace hvd {

namespace {
constexpr uint64_t kFlagNoAnnouncements = 1;
constexpr uint64_t kFlagNotBusy = 2;
constexpr uint64_t kFlagNoShutdown = 4;
constexpr uint64_t kFlagOnlyCached = 8;  // all pending work waits on cache slots
constexpr uint64_t kFlagCpusFree = 16;   // this rank's CPUs are free for overlap
constexpr uint64_t kFlagNearCores = 32;  // this rank saw no node's ranks on far cores
constexpr uint64_t kFlagBackToBack = 64; // this rank's large allreduces lie back to back

// Index of the lowest set bit of a non-zero word: the next slot in a bitmap scan.
int lowest_bit(uint64_t x) { return __builtin_ctzll(x); }
}  // namespace

int Controller::cached_slot(const Request& r) {
  if (cache_.capacity() == 0) return -1;
  NameEntry* entry = r.name_entry;
  if (entry && entry->cache_slot >= 0 && entry->cache_slot < static_cast<int>(cache_.capacity()) &&
      cache_.at(entry->cache_slot).version == entry->cache_version)
    return entry->cache_slot;
  const std::string* key = &r.name;  // the global set's keys are the names
  if (r.spec.process_set != 0) {
    TensorQueue::key_into(r.spec.process_set, r.name, &scratch_key_);
    key = &scratch_key_;
  }
  const int slot = cache_.find(*key, r.key_hash);
  if (entry) {
    entry->cache_slot = slot;
    entry->cache_version = slot >= 0 ? cache_.at(slot).version : 0;
  }
  return slot;
}

bool Controller::has_cached_wait_before(double time) const {
  for (size_t w = 0; w < waiting_bits_.size(); ++w)
    for (uint64_t x = waiting_bits_[w]; x; x &= x - 1)
      if (waiting_[w * 64 + lowest_bit(x)].since < time) return true;
  return false;
}

void Controller::fill_bits(uint64_t* words, bool shutdown_requested, double stale_before,
                           const RankWords& mine) const {
  std::fill(words, words + words_, 0);
  std::fill(words + words_, words + 3 * words_, ~uint64_t{0});
  // Slots of sets this rank is not in are always "ready" here. Only slots outside the
  // global set need a look, and membership is looked up once per set, not once per
  // slot (the table takes a lock).
  const std::vector<uint64_t>& other_set = cache_.other_set_words();
  std::unordered_map<int32_t, bool> member;
  for (size_t w = 0; w < other_set.size(); ++w) {
    for (uint64_t x = other_set[w]; x; x &= x - 1) {
      const int slot = static_cast<int>(w * 64) + lowest_bit(x);
      const int32_t id = cache_.at(slot).spec.process_set;
      auto it = member.find(id);
      if (it == member.end()) {
        auto set = sets_->find(id);
        it = member.emplace(id, set && set->member()).first;
      }
      if (!it->second) words[w] |= uint64_t{1} << (slot % 64);
    }
  }
  // A joined rank takes part in every cached allreduce of its sets with zeros.
  if (joined_locally()) {
    const std::vector<uint64_t>& occupied = cache_.occupied_words();
    for (size_t w = 0; w < occupied.size(); ++w)
      for (uint64_t x = occupied[w]; x; x &= x - 1) {
        const int slot = static_cast<int>(w * 64) + lowest_bit(x);
        if (cache_.at(slot).spec.op == OpType::Allreduce) words[w] |= uint64_t{1} << (slot % 64);
      }
  }
  // Requests kept by key are announced, not cached.
  const bool only_cached =
      unannounced_.empty() && decisions_.empty() && refusals_.empty() && pending_.empty();
  for (size_t w = 0; w < waiting_bits_.size(); ++w) {
    const uint64_t waiting = waiting_bits_[w];
    words[w] |= waiting;
    words[2 * words_ + w] &= ~waiting;
    for (uint64_t x = waiting; x; x &= x - 1) {
      const int bit = lowest_bit(x);
      if (waiting_[w * 64 + bit].since < stale_before) words[words_ + w] &= ~(uint64_t{1} << bit);
    }
  }
  for (int slot : invalid_slots_) words[words_ + slot / 64] &= ~(uint64_t{1} << (slot % 64));
  uint64_t flags = 0;
  if (unannounced_.empty() && decisions_.empty() && refusals_.empty()) flags |= kFlagNoAnnouncements;
  if (!busy()) flags |= kFlagNotBusy;
  if (!shutdown_requested) flags |= kFlagNoShutdown;
  if (only_cached) flags |= kFlagOnlyCached;
  if (mine.cpus_free) flags |= kFlagCpusFree;
  if (mine.near_cores) flags |= kFlagNearCores;
  if (mine.back_to_back) flags |= kFlagBackToBack;
  words[3 * words_] = flags;
}

RoundFlags Controller::apply_bits(const uint64_t* words) {
  RoundFlags flags;
  uint64_t f = words[3 * words_];
  flags.any_announcements = !(f & kFlagNoAnnouncements);
  flags.any_busy = !(f & kFlagNotBusy);
  flags.shutdown = !(f & kFlagNoShutdown);
  flags.only_cached = (f & kFlagOnlyCached) != 0;
  flags.cpus_free = (f & kFlagCpusFree) != 0;
  flags.near_cores = (f & kFlagNearCores) != 0;
  flags.back_to_back = (f & kFlagBackToBack) != 0;
  invalid_slots_.clear();

  // Word by word, in slot order (every rank must apply the same slots in the same
  // order); forget_slot changes the bitmap, so each word is read before its slots go.
  const std::vector<uint64_t>& occupied = cache_.occupied_words();
  bool any_invalid = false;
  for (size_t w = 0; w < words_; ++w) {
    for (uint64_t x = ~words[words_ + w] & occupied[w]; x; x &= x - 1) {
      forget_slot(static_cast<int>(w * 64) + lowest_bit(x));
      any_invalid = true;
    }
  }
  // An invalidated slot sends its requests back through announcements this round;
  // they no longer wait on the cache, so the loop must not go idle on them.
  if (any_invalid) {
    flags.any_announcements = true;
    flags.only_cached = false;
  }

  // Ready: every rank is ready (or joined, or outside the set) and some rank has a
  // request. Without the second condition the round in which the last ranks join
  // would run every cached allreduce of the job on zeros alone.
  for (size_t w = 0; w < words_; ++w) {
    for (uint64_t x = words[w] & ~words[2 * words_ + w] & occupied[w]; x; x &= x - 1) {
      const int slot = static_cast<int>(w * 64) + lowest_bit(x);
      cache_.touch(slot);
      add_ready(cache_.at(slot));
    }
  }
  return flags;
}

void Controller::forget_slot(int slot) {
  stop_waiting(slot);
  cache_.erase(slot);
}

size_t Controller::set_cache_enabled(bool enabled) {
  enabled = enabled && cache_capacity_ > 0;
  if (enabled == cache_enabled_) return 0;
  size_t sent_back = 0;
  // Slot order, so the announcements come in a stable order.
  for (size_t slot = 0; slot < cache_.capacity(); ++slot) {
    if (!waiting_on(static_cast<int>(slot))) continue;
    stop_waiting(static_cast<int>(slot));
    ++sent_back;
  }
  invalid_slots_.clear();
  cache_enabled_ = enabled;
  cache_ = ResponseCache(enabled ? cache_capacity_ : 0);
  churn_ = CacheChurn(cache_.capacity());
  words_ = (cache_.capacity() + 63) / 64;
  waiting_ = std::vector<Local>(cache_.capacity());
  waiting_bits_.assign(words_, 0);
  HVD_LOG(Debug, "response cache %s (%zu waiting requests announced again)",
          enabled ? "on" : "off", sent_back);
  return sent_back;
}

void Controller::add_response(Response&& response) {
  if (response.error.ok() && cache_.capacity() > 0) {
    std::string evicted;
    const int slot = cache_.put(response, &evicted);
    // The evicted tensor's slot now holds this one: a request waiting for the evicted
    // one is announced by name instead.
    if (!evicted.empty()) {
      stop_waiting(slot);
      churn_.evicted(evicted);
    }
    if (slot >= 0 && churn_.inserted(cache_.at(slot).key) && world_rank_ == 0)
      HVD_LOG(Warning,
              "the response cache holds %zu tensors (HOROVOD_CACHE_CAPACITY) and %zu tensors "
              "have come back after it evicted them: the steps cycle through more tensors "
              "than it holds, so each of them is negotiated by name every step, several "
              "times the cost of a cached one. Set HOROVOD_CACHE_CAPACITY above the number "
              "of tensors a step reduces.",
              cache_.capacity(), churn_.returned());
  }
  add_ready(std::move(response));
}

}  // namespace hvd
