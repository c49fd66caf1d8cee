#include "adapt/cache_churn.h"

#include <algorithm>

namespace hvd {

void CacheChurn::evicted(const std::string& key) {
  if (told_) return;
  if (evicted_.size() >= kKeptFactor * std::max(capacity_, kMinReturns)) evicted_.clear();
  evicted_.insert(key);
}

bool CacheChurn::inserted(const std::string& key) {
  if (told_ || evicted_.empty() || evicted_.erase(key) == 0) return false;
  ++returned_;
  if (returned_ < std::max(capacity_, kMinReturns)) return false;
  told_ = true;
  evicted_.clear();
  return true;
}

}  // namespace hvd
