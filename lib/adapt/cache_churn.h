// Tells a job that its steps reduce more tensors than the response cache holds
// (HOROVOD_CACHE_CAPACITY, 1024 by default as in Horovod). The cache forgets its least
// recently used tensor to make room, so a step that cycles through more tensors than
// it has slots evicts each one before it comes back: every tensor of every step is
// then negotiated by name, which at 2 ranks cost 3.4-5.3 us a tensor against 0.5 us
// from the cache (measured), and nothing said why.
//
// The evidence is tensors that come back after their eviction. Names made up afresh
// for every call (unnamed tensors) are evicted too but never come back, and a larger
// cache would not help them: they are not counted. The Controller's cache is the same
// on every rank, so every rank counts alike; rank 0 says it.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_set>

namespace hvd {

class CacheChurn {
 public:
  explicit CacheChurn(size_t capacity) : capacity_(capacity) {}

  // key was evicted from the cache.
  void evicted(const std::string& key);
  // key was put in the cache. True once per cache: when as many evicted tensors have
  // come back as the cache holds (a whole cache's worth, at least kMinReturns), the
  // moment to tell the user.
  bool inserted(const std::string& key);
  size_t returned() const { return returned_; }

  static constexpr size_t kMinReturns = 16;

 private:
  size_t capacity_;
  // Evicted keys not yet back. Bounded: a job that makes names up would grow it for
  // ever, so it is emptied at kKeptFactor times the capacity.
  std::unordered_set<std::string> evicted_;
  static constexpr size_t kKeptFactor = 4;
  size_t returned_ = 0;
  bool told_ = false;
};

}  // namespace hvd
