// Runs the launcher command without a shell and waits for it, passing SIGINT,
// SIGTERM, SIGHUP and SIGQUIT on to its process group.
#pragma once

#include <string>

#include "command_builder.h"

namespace hvdrun {

struct JobOutcome {
  bool started = false;
  int exit_status = 127;  // the job's status; 128+N if killed by signal N
  std::string error;      // why it could not start
};

JobOutcome run_job(const LaunchCommand& command);

}  // namespace hvdrun
