// How one MPI job of hvdrun ended, for a caller that decides what comes next (an
// elastic job's driver).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lost_node.h"
#include "rank_exit.h"

namespace hvdrun {

struct JobReport {
  int status = 0;           // what hvdrun exits with for this job alone
  bool started = false;     // false: it could not start (a message was printed)
  int forwarded_signal = 0; // the user's signal passed on to it
  std::vector<RankExit> failures;  // the ranks' failures, earliest first
  int64_t ranks_ended = 0;         // ranks whose monitors reported their exit
  std::vector<LostNode> lost;      // hosts lost with all their processes
  // Ranks hvdrun stopped waiting for (JobOutcome::silent_ranks) and their hosts: cut
  // off from the launcher after the other ranks had exited.
  std::vector<int> silent_ranks;
  std::vector<std::string> silent_hosts;
  std::string verdict;      // the lines saying why it failed ("hvdrun: the job failed: ...")
};

}  // namespace hvdrun
