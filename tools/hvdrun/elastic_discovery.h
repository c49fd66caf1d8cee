// The host discovery script of an elastic job (horovodrun's --host-discovery-script):
// a program, run with /bin/sh -c, that prints the hosts available now, one a line as
// `host` or `host:slots`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hosts.h"
#include "result.h"

namespace hvdrun {

// How long one run of the script may take; one that hangs is killed (with everything
// it started) and its run counts as failed, so that the last good list stays.
inline constexpr double kDiscoveryTimeoutSeconds = 30;

// The script's output: hosts in the order printed, `host` with default_slots. Blank
// lines are skipped; a host printed twice takes its last line's slots (as Horovod does)
// and keeps its first place. An empty list is valid: no host is available now.
Result<HostList> parse_discovery_output(std::string_view text, int64_t default_slots);

// Runs the script and parses what it printed to stdout (its stderr is hvdrun's). A
// failure says why: could not start, exit status, killed after timeout_s, bad line.
Result<HostList> run_discovery_script(const std::string& script, int64_t default_slots,
                                      double timeout_s = kDiscoveryTimeoutSeconds);

}  // namespace hvdrun
