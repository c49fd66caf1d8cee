// The per-rank monitor: `hvdrun --rank-monitor -- command...`, which hvdrun puts in
// front of the user's command on the launcher's command line. It runs the command as
// its child, passes signals on, passes the child's stdout and stderr on a line at a
// time (line_relay.h), reports when the child loads MPI and when it exits (the
// markers of rank_exit.h, on stderr, each starting a line); then it ends as the child
// did (same exit status, or the same signal). The child dies with the monitor
// (PR_SET_PDEATHSIG), so a launcher that kills the monitor leaves no rank behind.
#pragma once

namespace hvdrun {

inline constexpr const char* kRankMonitorFlag = "--rank-monitor";

// `hvdrun --rank-monitor [--events DIR] -- command...`: with --events, markers go to
// files in DIR instead of stderr (for --output-filename).
inline constexpr const char* kRankMonitorEventsFlag = "--events";

// argv: the words after "--". Returns the status to exit with.
int run_rank_monitor(int argc, char** argv, const char* events_dir = nullptr);

}  // namespace hvdrun
