// Runs the launcher command without a shell and waits for it, passing SIGINT,
// SIGTERM, SIGHUP and SIGQUIT on to its process group.
//
// With watch_ranks, the job's stderr comes through hvdrun (StderrRelay): the first
// rank failure a rank monitor reports ends the job at once (SIGTERM to the launcher's
// group, SIGKILL 5 s later), since the launcher may wait for ever on ranks blocked in
// MPI_Init for a peer that is gone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "command_builder.h"
#include "event_files.h"
#include "lost_node.h"
#include "rank_exit.h"

namespace hvdrun {

struct JobOutcome {
  bool started = false;
  int exit_status = 127;  // the job's status; 128+N if killed by signal N
  std::string error;      // why it could not start
  std::optional<RankExit> first_failure;  // watch_ranks: the earliest rank failure
  std::vector<RankExit> failures;         // watch_ranks: every rank failure, earliest first
  int forwarded_signal = 0;  // a signal hvdrun passed on to the job (the user stopped it)
  // A signal that ended the launcher itself, neither passed on by hvdrun nor sent by it
  // to end a failed job: the launcher crashed (Open MPI's mpirun has segfaulted while
  // relaying several ranks' MPI_Abort). What it left of the job here has been killed.
  int launcher_crash_signal = 0;
  // watch_ranks: what was seen of a node lost (lost_node.h): the launcher's lines, the
  // Hydra proxies that ended while the launcher ran, the ranks that reported their exit.
  LauncherLossLines loss_lines;
  std::set<int> proxies_ended_first;
  long job_family = -1;  // Open MPI: from its daemons' command lines
  std::set<int> ranks_reported;
  // Ranks whose monitors went silent while others had exited, for which hvdrun ended
  // the launcher (it waited on their node for ever).
  std::vector<int> silent_ranks;
};

// events: with watch_ranks, where the rank monitors write their markers as files
// instead of stderr (--output-filename); null: stderr only. verbose: say what was
// found there that is not a monitor's marker. num_proc: the job's ranks (0: not known),
// for the silent-node rule of relay_and_wait. expected_ranks (with watch_ranks; 0: not
// known): once that many ranks have reported their exit, a launcher still running
// kRanksGoneSeconds later is ended (SIGTERM, then SIGKILL): nothing of the job is left
// for it to wait for.
JobOutcome run_job(const LaunchCommand& command, bool watch_ranks = false,
                   EventFolder* events = nullptr, bool verbose = false, int64_t num_proc = 0,
                   int64_t expected_ranks = 0);

inline constexpr double kRanksGoneSeconds = 10;

}  // namespace hvdrun
