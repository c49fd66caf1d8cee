// Hosts that cannot be resolved are refused before launch: a mistyped name otherwise
// reaches ssh, which prints one line while the launcher waits for that node for ever.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hosts.h"
#include "result.h"

namespace hvdrun {

// Looks a host name up; empty on success, else the resolver's reason.
using Resolver = std::function<std::string(const std::string& host)>;
// getaddrinfo.
std::string resolve_host(const std::string& host);

// Every host must resolve, unless the MPI arguments start the ranks without a remote
// shell (Hydra's "-launcher fork" / "-bootstrap fork"), where names only label
// simulated nodes, or through a remote command of the user's (-launcher-exec,
// plm_rsh_agent) that maps names itself. Names all the hosts that fail in one message.
Status check_hosts_resolve(const HostList& hosts, const std::vector<std::string>& mpi_args,
                           const Resolver& resolve = resolve_host);

}  // namespace hvdrun
