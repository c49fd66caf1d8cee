#include "elastic_outcome.h"

#include <algorithm>
#include <csignal>
#include <optional>

#include "elastic_hosts.h"

namespace hvdrun {
namespace {

// Whether a generation ended because its ranks left for a change of hosts: each
// failure is status 75, or the launcher's cleanup (SIGTERM, SIGKILL) after one.
bool left_for_new_hosts(const JobReport& r) {
  if (!r.lost.empty() || !r.silent_ranks.empty()) return false;
  if (r.failures.empty()) return r.status == kElasticRestartStatus;
  bool seen_restart = false;
  for (const RankExit& f : r.failures) {
    if (f.signal == 0 && f.exit_code == kElasticRestartStatus) {
      seen_restart = true;
      continue;
    }
    if (seen_restart && (f.signal == SIGTERM || f.signal == SIGKILL)) continue;
    return false;
  }
  return seen_restart;
}

// The rank a failure is blamed on: the earliest that failed on its own, not with 76
// (a collective failed because of another rank) nor killed in the cleanup after
// another's failure. None when only such followers failed.
std::optional<RankExit> failing_rank(const JobReport& r) {
  bool follower_seen = false;
  std::optional<RankExit> first_killed;
  for (const RankExit& f : r.failures) {
    const bool killed = f.signal == SIGTERM || f.signal == SIGKILL;
    if (f.signal == 0 && f.exit_code == kElasticPeerFailedStatus) {
      follower_seen = true;
    } else if (!killed) {
      return f;
    } else if (!first_killed) {
      if (follower_seen) continue;
      first_killed = f;
    }
  }
  return first_killed;
}

// "rank(s) 2,3 on host b2 stopped reaching the launcher" for ranks hvdrun stopped
// waiting for (JobReport::silent_ranks).
std::string describe_silent_ranks(const JobReport& r) {
  std::string ranks, hosts;
  for (int rank : r.silent_ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
  for (const std::string& h : r.silent_hosts) hosts += (hosts.empty() ? "" : ", ") + h;
  return "rank(s) " + ranks + (hosts.empty() ? std::string() : " on host " + hosts) +
         " stopped reaching the launcher";
}

// "rank 3 exited with status 1" from "rank 3 (pid 42 on b2) exited with status 1": the
// host is named beside it.
std::string without_pid(std::string text) {
  const size_t open = text.find(" (pid ");
  const size_t close = open == std::string::npos ? open : text.find(')', open);
  if (close != std::string::npos) text.erase(open, close + 1 - open);
  return text;
}

bool killed_in_cleanup(const RankExit& r) { return r.signal == SIGTERM || r.signal == SIGKILL; }

}  // namespace

GenerationVerdict judge_generation(const JobReport& report, const HostList& ranks, int64_t np) {
  GenerationVerdict v;
  const bool nothing_failed = report.failures.empty() && report.lost.empty();
  // Every rank returned 0: done, also when hvdrun had to end a launcher that stayed.
  if (nothing_failed && report.silent_ranks.empty() && (report.status == 0 || report.ranks_ended >= np)) {
    v.end = GenerationEnd::kDone;
    return v;
  }
  // The others returned 0 before a node went silent: they return only once the
  // training function returned on every rank (hvd.elastic.run agrees on it), so the
  // work is done, and its state files are gone: a next generation would start over.
  if (nothing_failed && !report.silent_ranks.empty() &&
      report.ranks_ended + static_cast<int64_t>(report.silent_ranks.size()) >= np) {
    v.end = GenerationEnd::kDone;
    v.done_note = describe_silent_ranks(report);
    return v;
  }
  if (left_for_new_hosts(report)) {
    v.end = GenerationEnd::kLeftForNewHosts;
    return v;
  }
  v.end = GenerationEnd::kFailed;
  if (!report.lost.empty()) {
    for (const LostNode& n : report.lost) v.blamed.push_back(n.host);
    v.cause = describe_lost_nodes(report.lost);
    v.after = ", after " + v.cause;
    return v;
  }
  if (!report.silent_ranks.empty()) {
    // A node cut off from the launcher is a lost host; a rank that failed on its own
    // is blamed beside it.
    v.blamed = report.silent_hosts;
    v.cause = describe_silent_ranks(report);
    if (auto rank = failing_rank(report); rank && !killed_in_cleanup(*rank)) {
      const auto host = host_of_rank(ranks, rank->rank);
      if (host && std::find(v.blamed.begin(), v.blamed.end(), *host) == v.blamed.end())
        v.blamed.push_back(*host);
      v.cause = describe_rank_exit(*rank) + ", and " + v.cause;
    }
    v.after = ", after " + without_pid(v.cause);
    return v;
  }
  if (auto rank = failing_rank(report)) {
    const auto host = host_of_rank(ranks, rank->rank);
    if (host) v.blamed.push_back(*host);
    v.cause = describe_rank_exit(*rank);
  } else if (!report.failures.empty()) {
    v.cause = describe_rank_exit(report.failures.front()) + ", after another rank's failure";
  } else {
    v.cause = "the launcher exited with status " + std::to_string(report.status);
  }
  v.after = v.blamed.empty() ? ", after " + without_pid(v.cause)
                             : ", after host " + v.blamed.front() + " failed (" + without_pid(v.cause) + ")";
  return v;
}

}  // namespace hvdrun
