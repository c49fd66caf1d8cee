#include "elastic_hosts.h"

#include <algorithm>
#include <cmath>

namespace hvdrun {

void ElasticHosts::discovered(const HostList& hosts) {
  discovered_ = hosts;
  for (const HostSlots& h : hosts)
    if (std::find(order_.begin(), order_.end(), h.host) == order_.end()) order_.push_back(h.host);
}

HostList ElasticHosts::available(double now) {
  HostList out;
  for (const std::string& name : order_) {
    auto found = std::find_if(discovered_.begin(), discovered_.end(),
                              [&](const HostSlots& h) { return h.host == name; });
    if (found == discovered_.end()) continue;
    State& s = states_[name];
    if (s.out && cooldown_ && now >= s.until) s.out = false;  // its cooldown is over
    if (!s.out) out.push_back(*found);
  }
  return out;
}

double ElasticHosts::blacklist(const std::string& host, double now, double random01) {
  State& s = states_[host];
  if (!cooldown_) {
    s.out = true;
    return -1;
  }
  if (s.out && now < s.until) return s.until - now;
  s.out = true;
  ++s.failures;
  const double low = static_cast<double>(cooldown_->first), high = static_cast<double>(cooldown_->second);
  const double delay = low * std::ldexp(1.0, std::min(s.failures - 1, 30)) + random01 * low;
  const double seconds = std::max(low, std::min(high, delay));
  s.until = now + seconds;
  return seconds;
}

bool ElasticHosts::is_blacklisted(const std::string& host, double now) const {
  auto it = states_.find(host);
  if (it == states_.end() || !it->second.out) return false;
  return !cooldown_ || now < it->second.until;
}

std::vector<std::string> ElasticHosts::blacklisted(double now) const {
  std::vector<std::string> out;
  for (const auto& [name, state] : states_)
    if (is_blacklisted(name, now)) out.push_back(name);
  return out;
}

HostList assign_ranks(const HostList& available, std::optional<int64_t> max_np) {
  HostList out;
  int64_t left = max_np ? *max_np : INT64_MAX;
  for (const HostSlots& h : available) {
    if (left <= 0) break;
    const int64_t n = std::min(h.slots, left);
    out.push_back({h.host, n});
    left -= n;
  }
  return out;
}

int host_update_result(const HostList& running, const HostList& available,
                       std::optional<int64_t> max_np) {
  const HostList next = assign_ranks(available, max_np);
  if (next == running) return kNoUpdate;
  auto slots_in = [](const HostList& list, const std::string& host) -> int64_t {
    for (const HostSlots& h : list)
      if (h.host == host) return h.slots;
    return 0;
  };
  int result = kNoUpdate;
  for (const HostSlots& h : running)
    if (slots_in(available, h.host) < h.slots) result |= kHostsRemoved;
  for (const HostSlots& h : next)
    if (h.slots > slots_in(running, h.host)) result |= kHostsAdded;
  return result;
}

std::optional<std::string> host_of_rank(const HostList& hosts, int64_t rank) {
  for (const HostSlots& h : hosts) {
    if (rank < h.slots) return h.host;
    rank -= h.slots;
  }
  return std::nullopt;
}

std::string describe_hosts(const HostList& hosts) {
  std::string out;
  for (const HostSlots& h : hosts)
    out += (out.empty() ? "" : ", ") + h.host + ":" + std::to_string(h.slots);
  return out;
}

}  // namespace hvdrun
