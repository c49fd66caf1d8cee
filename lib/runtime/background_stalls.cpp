// The stall inspector (HOROVOD_STALL_CHECK_TIME_SECONDS): tensors some ranks announced
// and others have not, warned about on every rank, and timed out by the coordinator
// (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS) in the next round's messages.
#include "runtime/background.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/rank_list.h"

namespace hvd {

// The stall inspector's warning. Missing ranks that have been in another process set's
// operation while the tensor waited are named as busy there: "not submitted" sent
// users looking for a rank that skipped the tensor when it was only still at work.
void BackgroundLoop::warn_stall(const Controller::Stalled& s, double now) const {
  std::vector<int> absent;
  std::string busy;
  for (int rank : s.missing_ranks) {
    auto it = busy_elsewhere_.find(rank);
    if (it == busy_elsewhere_.end() || (it->second.ended >= 0 && it->second.ended < s.first_seen)) {
      absent.push_back(rank);
      continue;
    }
    char until[64] = "";
    if (it->second.ended >= 0) std::snprintf(until, sizeof until, ", done %.1f s ago", now - it->second.ended);
    busy += std::string(busy.empty() ? "" : "; ") + "rank " + std::to_string(rank) + " in " +
            it->second.what + until;
  }
  if (!busy.empty())
    HVD_LOG(Warning,
            "tensor '%s' (process set %d) has waited %.1f s for ranks busy in another process "
            "set's operation (%s)%s%s%s",
            s.name.c_str(), s.process_set, now - s.first_seen, busy.c_str(),
            absent.empty() ? "" : "; rank(s) ", absent.empty() ? "" : rank_list(absent).c_str(),
            absent.empty() ? "" : " have not submitted it (a rank stopped, skipped the tensor or named it differently)");
  else
    HVD_LOG(Warning,
            "tensor '%s' (process set %d) has waited %.1f s for rank(s) %s: they have not "
            "submitted it (a rank stopped, skipped the tensor or named it differently)",
            s.name.c_str(), s.process_set, now - s.first_seen, rank_list(s.missing_ranks).c_str());
}

void BackgroundLoop::inspect_stalls() {
  if (rt_.params.stall_check_disable || rt_.params.stall_check_time_s <= 0) return;
  double now = now_seconds();
  const double interval = rt_.params.stall_check_time_s;
  const double limit = rt_.params.stall_shutdown_time_s;
  // Checked a tenth of the shortest of the two times apart (at most once a second, at
  // least 50 ms apart): a check once a second made a 3 s timeout fire at 4 s and a 1 s
  // warning say "waited 2 s".
  const double every = std::clamp(std::min(interval, limit > 0 ? limit : interval) / 10, 0.05, 1.0);
  if (now - last_stall_check_ < every) return;
  last_stall_check_ = now;
  // Keys that are no longer stalled drop out here, so a later stall of the same
  // tensor is warned about afresh.
  std::unordered_map<std::string, StallWarning> warned;
  for (const Controller::Stalled& s : controller_.stalled(now - interval)) {
    StallWarning w{s.first_seen, 0};
    auto it = stall_warned_.find(s.key);
    if (it != stall_warned_.end() && it->second.first_seen == s.first_seen) w = it->second;
    // Once per tensor per interval: at the warning time, then every interval after,
    // until its timeout is decided.
    if (!w.timed_out && (w.last_warning == 0 || now - w.last_warning >= interval)) {
      warn_stall(s, now);
      w.last_warning = now;
    }
    if (limit > 0 && now - s.first_seen >= limit && !w.timed_out) {
      // Decided once: the entry leaves the table in the round that carries it.
      controller_.decide_timeout(
          s, "tensor '" + s.name + "' timed out after " + std::to_string(static_cast<int>(limit)) +
                 " s (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS): ranks " + rank_list(s.missing_ranks) +
                 " never submitted it");
      w.timed_out = true;
    }
    warned.emplace(s.key, w);
  }
  stall_warned_.swap(warned);
}

}  // namespace hvd
