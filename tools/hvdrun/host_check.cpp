#include "host_check.h"

#include <ifaddrs.h>
#include <limits.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

namespace hvdrun {
namespace {

// Hydra's fork launcher: every rank starts on this machine; names only label
// simulated nodes.
bool uses_fork_launcher(const std::vector<std::string>& mpi_args) {
  for (size_t i = 0; i < mpi_args.size(); ++i) {
    const std::string& a = mpi_args[i];
    const std::string next = i + 1 < mpi_args.size() ? mpi_args[i + 1] : "";
    if ((a == "-launcher" || a == "-bootstrap") && next == "fork") return true;
    if (a == "-launcher=fork" || a == "-bootstrap=fork") return true;
  }
  return false;
}

// True when the MPI arguments start the ranks without resolving the host names
// themselves: the fork launcher, or a remote command of the user's (Hydra's
// -launcher-exec/-bootstrap-exec, Open MPI's plm_rsh_agent), which maps the names as it
// likes (the network lab's do).
bool hosts_resolved_elsewhere(const std::vector<std::string>& mpi_args) {
  if (uses_fork_launcher(mpi_args)) return true;
  for (const std::string& a : mpi_args) {
    if (a == "-launcher-exec" || a == "-bootstrap-exec" || a.rfind("-launcher-exec=", 0) == 0 ||
        a.rfind("-bootstrap-exec=", 0) == 0)
      return true;
    if (a == "plm_rsh_agent" || a == "orte_rsh_agent") return true;
  }
  return false;
}

}  // namespace

std::string resolve_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (found) ::freeaddrinfo(found);
  return rc == 0 ? std::string() : std::string(::gai_strerror(rc));
}

std::vector<std::pair<std::string, std::string>> unresolvable_hosts(
    const HostList& hosts, const std::vector<std::string>& mpi_args, const Resolver& resolve) {
  std::vector<std::pair<std::string, std::string>> bad;
  if (hosts_resolved_elsewhere(mpi_args)) return bad;
  for (const HostSlots& h : hosts) {
    std::string why = resolve(h.host);
    if (!why.empty()) bad.emplace_back(h.host, std::move(why));
  }
  return bad;
}

Status check_hosts_resolve(const HostList& hosts, const std::vector<std::string>& mpi_args,
                           const Resolver& resolve) {
  std::string bad;
  for (const auto& [host, why] : unresolvable_hosts(hosts, mpi_args, resolve))
    bad += (bad.empty() ? "" : ", ") + ("'" + host + "' (" + why + ")");
  if (bad.empty()) return success();
  return Status::failure("cannot resolve host " + bad +
                         ": check the spelling in -H or the hostfile, or add the name to "
                         "/etc/hosts or DNS; nothing was launched");
}

bool is_this_machine(const std::string& host) {
  if (host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1") return true;
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return false;
  std::string self(name);
  return host == self || self.rfind(host + ".", 0) == 0 || host.rfind(self + ".", 0) == 0;
}

bool ranks_run_here(const HostList& hosts, const std::vector<std::string>& mpi_args) {
  if (hosts.empty() || uses_fork_launcher(mpi_args)) return true;
  return std::any_of(hosts.begin(), hosts.end(),
                     [](const HostSlots& h) { return is_this_machine(h.host); });
}

std::vector<std::string> local_interfaces() {
  std::vector<std::string> names;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return names;
  for (ifaddrs* a = list; a; a = a->ifa_next)
    if (a->ifa_name) names.emplace_back(a->ifa_name);
  ::freeifaddrs(list);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Status check_network_interfaces(const std::vector<std::string>& wanted,
                                const std::vector<std::string>& existing) {
  // Nothing to compare with (getifaddrs failed): the launcher will say.
  if (existing.empty()) return success();
  std::vector<std::string> missing;
  for (const std::string& name : wanted)
    if (std::find(existing.begin(), existing.end(), name) == existing.end() &&
        std::find(missing.begin(), missing.end(), name) == missing.end())
      missing.push_back(name);
  if (missing.empty()) return success();
  auto join = [](const std::vector<std::string>& names) {
    std::string text;
    for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
    return text;
  };
  return Status::failure(
      "--network-interface: this machine has no network interface " +
      (missing.size() == 1 ? "'" + missing[0] + "'" : "named " + join(missing)) +
      "; its interfaces are " + join(existing) + " (ip link lists them); nothing was launched");
}

}  // namespace hvdrun
