// The hosts of an elastic job: what discovery reported, the blacklist of hosts whose
// ranks failed (with Horovod's cooldown), the order ranks are placed in, and whether a
// change of hosts should change the running generation. Pure: time and randomness are
// passed in, so that tests call it with any values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hosts.h"

namespace hvdrun {

// Horovod's HostUpdateResult bits (runner/elastic/worker.py), sent to the workers.
enum HostUpdate : int { kNoUpdate = 0, kHostsRemoved = 1, kHostsAdded = 2 };

class ElasticHosts {
 public:
  // cooldown: --blacklist-cooldown-range MIN MAX seconds; none: a blacklisted host stays
  // out for the rest of the job.
  explicit ElasticHosts(std::optional<std::pair<int64_t, int64_t>> cooldown = std::nullopt)
      : cooldown_(cooldown) {}

  // A new list from discovery. Hosts keep their place in the order ranks are placed
  // in (the oldest first, so that surviving hosts keep their ranks); new ones go last,
  // in the script's order.
  void discovered(const HostList& hosts);
  const HostList& discovered_hosts() const { return discovered_; }

  // The discovered hosts not blacklisted at `now`, in placement order. A host whose
  // cooldown ended is taken back.
  HostList available(double now);

  // Leaves a host out: for good without a cooldown range; else for MIN * 2^(n-1)
  // seconds at its n-th failure plus random01 * MIN, within [MIN, MAX] (Horovod's
  // backoff). A host failing again while still out does not extend it. Returns the
  // seconds it is out for, or -1 for good.
  double blacklist(const std::string& host, double now, double random01);
  bool is_blacklisted(const std::string& host, double now) const;
  // The hosts out at `now`, in name order.
  std::vector<std::string> blacklisted(double now) const;

 private:
  struct State {
    bool out = false;
    int failures = 0;
    double until = 0;  // with a cooldown: when it may come back
  };
  std::optional<std::pair<int64_t, int64_t>> cooldown_;
  HostList discovered_;
  std::vector<std::string> order_;  // every host ever discovered, in placement order
  std::map<std::string, State> states_;
};

// A generation's ranks: hosts in order, each filled before the next, at most max_np in
// all. Hosts left without a rank are not in the result.
HostList assign_ranks(const HostList& available, std::optional<int64_t> max_np);

// Whether the hosts available now should change the running generation (its ranks per
// host, from assign_ranks): kHostsRemoved when a host of it is gone or has fewer slots
// than ranks there, kHostsAdded when the next generation would have more ranks on a
// host; both, or kNoUpdate when the next generation would be the same.
int host_update_result(const HostList& running, const HostList& available,
                       std::optional<int64_t> max_np);

// The host of a rank when ranks fill the hosts in order; none beyond their slots.
std::optional<std::string> host_of_rank(const HostList& hosts, int64_t rank);

// Names a generation's hosts (format_host_list) for the rank monitors, which set
// HOROVOD_HOSTNAME from it (rank_monitor.h).
inline constexpr const char* kElasticRankHostsVariable = "HVDRUN_ELASTIC_RANK_HOSTS";

// "a:2, b:2, c:1"
std::string describe_hosts(const HostList& hosts);

}  // namespace hvdrun
