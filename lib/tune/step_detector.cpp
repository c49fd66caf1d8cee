#include "tune/step_detector.h"

#include <iterator>

namespace hvd {

bool StepDetector::observe(std::string_view name, size_t hash) {
  const TensorKeyRef key(name, hash);
  auto it = seen_.find(key);
  if (it == seen_.end()) {
    seen_.emplace(TensorKey{std::string(name), key.hash}, step_);
    ++in_step_;
    return false;
  }
  if (it->second != step_) {
    it->second = step_;
    ++in_step_;
    return false;
  }
  // Seen in this step already: it begins the next one.
  const uint64_t ended = step_++;
  if (seen_.size() > 2 * in_step_ + 1024) {
    for (auto e = seen_.begin(); e != seen_.end();)
      e = e->second == ended ? std::next(e) : seen_.erase(e);
    it = seen_.find(key);
  }
  it->second = step_;
  in_step_ = 1;
  return true;
}

bool StepDetector::observe(std::string_view name, size_t hash, int slot) {
  if (slot < 0) return observe(name, hash);
  const TensorKeyRef key(name, hash);
  if (static_cast<size_t>(slot) >= slots_.size()) slots_.resize(static_cast<size_t>(slot) + 1);
  SlotSeen& seen = slots_[static_cast<size_t>(slot)];
  if (seen.hash != key.hash) {  // the slot's first sight of this key: by name
    const bool ended = observe(name, key.hash);
    seen.hash = key.hash;
    seen.step = step_;
    return ended;
  }
  if (seen.step != step_) {
    seen.step = step_;
    ++in_step_;
    return false;
  }
  seen.step = ++step_;  // seen in this step already: it begins the next one
  in_step_ = 1;
  return true;
}

}  // namespace hvd
