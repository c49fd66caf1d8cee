#include "job.h"

#include <filesystem>
#include <iostream>

#include "host_check.h"
#include "launch.h"
#include "rank_monitor.h"

namespace hvdrun {
namespace {

// This program's own path, for the rank monitor on the launcher's command line (the
// same path on every node, as the command's own).
std::string own_path() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : path.string();
}

// Puts the rank monitor in front of the user's command (the last words of argv).
void monitor_each_rank(LaunchCommand* command, size_t user_words, const std::string& self) {
  auto at = command->argv.end() - static_cast<std::ptrdiff_t>(user_words);
  command->argv.insert(at, {self, kRankMonitorFlag, "--"});
}

}  // namespace

int usage_error(const std::string& message) {
  std::cerr << "hvdrun: " << message << "\nRun 'hvdrun --help' for the options.\n";
  return kUsageError;
}

Result<PreparedJob> prepare_job(const LaunchOptions& options, const PlanContext& context) {
  using R = Result<PreparedJob>;
  auto plan = make_plan(options, context);
  if (!plan) return R::failure(plan.error());
  for (const auto& w : plan->warnings) std::cerr << "hvdrun: warning: " << w << "\n";
  auto command = build_command(*plan);
  if (!command) return R::failure(command.error());
  return PreparedJob{std::move(plan).value(), std::move(command).value()};
}

int run_prepared_job(const PreparedJob& job, const LaunchOptions& options) {
  const LaunchPlan& plan = job.plan;
  // Each rank runs under the monitor, so that hvdrun learns which rank failed first
  // (and ends a job whose other ranks would wait in MPI_Init for ever). Not with
  // --output-filename: the markers would land in the files, not here.
  LaunchCommand launched = job.command;
  const std::string self = own_path();
  const bool watch_ranks = !plan.output_dir && !self.empty();
  if (watch_ranks) monitor_each_rank(&launched, plan.command.size(), self);

  // The command as it is run, rank monitor included.
  std::string rendered = render_command(launched);
  if (options.dry_run) {
    std::cout << rendered << "\n";
    return 0;
  }
  if (options.verbose) std::cerr << "hvdrun: " << flavor_name(plan.flavor) << ": " << rendered << "\n";

  if (plan.output_dir) {
    // Hydra opens the per-rank files but does not create their directory.
    std::error_code ec;
    std::filesystem::create_directories(*plan.output_dir, ec);
    if (ec)
      return usage_error("--output-filename " + *plan.output_dir + ": cannot create it (" +
                         ec.message() + ")");
  }

  Status resolvable = check_hosts_resolve(plan.hosts, plan.mpi_args);
  if (!resolvable) return usage_error(resolvable.error());

  std::cout.flush();
  std::cerr.flush();
  JobOutcome outcome = run_job(launched, watch_ranks);
  if (!outcome.started) {
    std::cerr << "hvdrun: " << outcome.error << "\n";
    return kNoLauncher;
  }
  if (outcome.first_failure && !outcome.forwarded_signal) {
    // The launcher's own summary may blame a rank it killed while cleaning up.
    std::cerr << "hvdrun: the job failed: " << describe_rank_exit(*outcome.first_failure)
              << " first; exiting with its status " << outcome.first_failure->shell_status()
              << "\n";
    return outcome.first_failure->shell_status();
  }
  return outcome.exit_status;
}

}  // namespace hvdrun
