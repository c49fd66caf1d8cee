#include "adapt/burst_cap.h"

namespace hvd {

void BurstCap::outlasted_cycle() {
  if (!measured_ || free_everywhere_) return;
  if (++long_bursts_ % kProbeEvery == 0) probe_next_ = true;
}

void BurstCap::early_round(double wall_s, int64_t delay_ns) {
  probe_next_ = false;
  if (!measured_ || wall_s <= 0 || delay_ns < 0) return;
  wall_s_ += wall_s;
  delay_ns_ += delay_ns;
  if (wall_s_ < kJudgedSeconds) return;
  const double share = static_cast<double>(delay_ns_) * 1e-9 / wall_s_;
  if (share >= kBusyShare) free_here_ = false;
  if (share < kFreeShare) free_here_ = true;
  wall_s_ = 0;
  delay_ns_ = 0;
}

bool BurstCap::agree(bool every_rank_free) {
  const bool was = free_everywhere_;
  free_everywhere_ = every_rank_free;
  return was != every_rank_free;
}

}  // namespace hvd
