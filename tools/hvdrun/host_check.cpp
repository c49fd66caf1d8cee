#include "host_check.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>

namespace hvdrun {
namespace {

// True when the MPI arguments start the ranks without resolving the host names
// themselves: Hydra's fork launcher (names only label simulated nodes), or a remote
// command of the user's (Hydra's -launcher-exec/-bootstrap-exec, Open MPI's
// plm_rsh_agent), which maps the names as it likes (the network lab's do).
bool hosts_resolved_elsewhere(const std::vector<std::string>& mpi_args) {
  for (size_t i = 0; i < mpi_args.size(); ++i) {
    const std::string& a = mpi_args[i];
    const std::string next = i + 1 < mpi_args.size() ? mpi_args[i + 1] : "";
    if ((a == "-launcher" || a == "-bootstrap") && next == "fork") return true;
    if (a == "-launcher=fork" || a == "-bootstrap=fork") return true;
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

Status check_hosts_resolve(const HostList& hosts, const std::vector<std::string>& mpi_args,
                           const Resolver& resolve) {
  if (hosts_resolved_elsewhere(mpi_args)) return success();
  std::string bad;
  for (const HostSlots& h : hosts) {
    const std::string why = resolve(h.host);
    if (!why.empty()) bad += (bad.empty() ? "" : ", ") + ("'" + h.host + "' (" + why + ")");
  }
  if (bad.empty()) return success();
  return Status::failure("cannot resolve host " + bad +
                         ": check the spelling in -H or the hostfile, or add the name to "
                         "/etc/hosts or DNS; nothing was launched");
}

}  // namespace hvdrun
