// One MPI job as hvdrun runs it: the options planned for the MPI found, the launcher
// command built, then run with each rank under the rank monitor. main runs one;
// --scaling (scaling.h) prepares one per size before running any.
#pragma once

#include <string>
#include <vector>

#include "command_builder.h"
#include "job_report.h"
#include "lost_node.h"
#include "rank_exit.h"
#include "options.h"
#include "plan.h"
#include "result.h"

namespace hvdrun {

inline constexpr int kUsageError = 2;
inline constexpr int kNoLauncher = 127;

// Prints "hvdrun: MESSAGE" and where the options are described; returns kUsageError.
int usage_error(const std::string& message);

struct PreparedJob {
  LaunchPlan plan;
  LaunchCommand command;
  // Set in the launcher's environment too, but never printed (--verbose): tokens.
  EnvList secret_launcher_env;
};

// Plans and builds the job; an error is a usage error. Prints the plan's warnings.
Result<PreparedJob> prepare_job(const LaunchOptions& options, const PlanContext& context);

// Runs it as run_prepared_job does, printing everything but the verdict. expected_ranks
// (0: none): see run_job.
JobReport run_prepared_job_report(const PreparedJob& job, const LaunchOptions& options,
                                  int64_t expected_ranks = 0);

// Runs it (or, with --dry-run, prints the command) and returns the status hvdrun
// exits with: the first failed rank's, else the launcher's; kUsageError or
// kNoLauncher, with a message printed, when it cannot start.
int run_prepared_job(const PreparedJob& job, const LaunchOptions& options);

}  // namespace hvdrun
