#include "tune/chunk_chooser.h"

#include <algorithm>

namespace hvd {

int64_t ChunkChooser::alternative(int64_t configured_bytes) {
  constexpr int64_t kMiB = 1 << 20;
  if (configured_bytes * 16 <= 16 * kMiB) return configured_bytes * 16;
  return std::max<int64_t>(configured_bytes / 16, 64 << 10);
}

ChunkChooser::ChunkChooser(int64_t configured_bytes, bool adaptive)
    : adaptive_(adaptive),
      bytes_{configured_bytes, alternative(configured_bytes)},
      largest_(std::max(bytes_[0], bytes_[1])) {}

int ChunkChooser::arm_of(int64_t chunk_bytes) const {
  for (int arm = 0; arm < kArms; ++arm)
    if (bytes_[arm] == chunk_bytes) return arm;
  return -1;
}

double ChunkChooser::median(int arm) const {
  const int n = std::min(count_[arm], kWindow);
  if (n == 0) return 0;
  std::array<double, kWindow> v = windows_[arm].values;
  std::nth_element(v.begin(), v.begin() + n / 2, v.begin() + n);
  return v[n / 2];
}

void ChunkChooser::record(int arm, int64_t buffer_bytes, double seconds) {
  if (!measures(buffer_bytes) || arm < 0 || arm >= kArms || seconds <= 0) return;
  Window& w = windows_[arm];
  w.values[w.next] = seconds / static_cast<double>(buffer_bytes);
  w.next = (w.next + 1) % kWindow;
  ++count_[arm];
  if (arm == best_) {
    if (++since_explore_ >= interval_) explore_now_ = true;
  } else {
    explore_now_ = false;
    since_explore_ = 0;
  }
  decide();
}

void ChunkChooser::decide() {
  const int other = 1 - best_;
  if (count_[other] == 0 || count_[best_] == 0) return;
  const double mine = median(best_), theirs = median(other);
  if (theirs >= mine * (1 - kMargin)) {
    // The challenger lost (or tied): tried again later, each loss doubling the wait.
    if (!explore_now_ && since_explore_ == 0 && interval_ < kMaxInterval) interval_ *= 2;
    return;
  }
  if (count_[other] < kMinSamples) {
    explore_now_ = true;  // it looks better on too few samples: try it again at once
    return;
  }
  best_ = other;
  explore_now_ = false;
  since_explore_ = 0;
  interval_ = kFirstInterval;
}

}  // namespace hvd
