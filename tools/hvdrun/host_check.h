// Hosts that cannot be resolved are refused before launch: a mistyped name otherwise
// reaches ssh, which prints one line while the launcher waits for that node for ever.
// So is a --network-interface this machine lacks when ranks run here: Hydra otherwise
// stops with its internals (HYDU_sock_get_iface_ip ...) and status 255.
#pragma once

#include <functional>
#include <string>
#include <utility>
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

// The hosts of `hosts` that do not resolve, each with the resolver's reason; none where
// the MPI arguments resolve the names elsewhere (as check_hosts_resolve).
std::vector<std::pair<std::string, std::string>> unresolvable_hosts(
    const HostList& hosts, const std::vector<std::string>& mpi_args, const Resolver& resolve = resolve_host);

// Whether host names this machine (localhost, a loopback address, its host name).
bool is_this_machine(const std::string& host);

// Whether ranks run on this machine: no hosts given, one of them is this machine, or
// Hydra's fork launcher starts every rank here whatever the names.
bool ranks_run_here(const HostList& hosts, const std::vector<std::string>& mpi_args);

// The network interfaces of this machine (getifaddrs), sorted, each once.
std::vector<std::string> local_interfaces();

// Every wanted interface must be among those that exist; the message names the missing
// ones and the ones there are.
Status check_network_interfaces(const std::vector<std::string>& wanted,
                                const std::vector<std::string>& existing);

}  // namespace hvdrun
