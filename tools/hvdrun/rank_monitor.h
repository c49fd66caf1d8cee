// The per-rank monitor: `hvdrun --rank-monitor -- command...`, which hvdrun puts in
// front of the user's command on the launcher's command line. It runs the command as
// its child, passes signals on, and when the child fails writes the marker of
// rank_exit.h to stderr; then it ends as the child did (same exit status, or the same
// signal). The child dies with the monitor (PR_SET_PDEATHSIG), so a launcher that
// kills the monitor leaves no rank behind.
#pragma once

namespace hvdrun {

inline constexpr const char* kRankMonitorFlag = "--rank-monitor";

// argv: the words after "--rank-monitor --". Returns the status to exit with.
int run_rank_monitor(int argc, char** argv);

}  // namespace hvdrun
