// hvdrun: horovodrun's command line on top of the MPI launcher.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <hvd/hvd.h>

#include "check_build.h"
#include "cli.h"
#include "command_builder.h"
#include "host_check.h"
#include "launch.h"
#include "mpi_detect.h"
#include "plan.h"
#include "rank_monitor.h"

namespace {

constexpr int kUsageError = 2;
constexpr int kNoLauncher = 127;

int usage_error(const std::string& message) {
  std::cerr << "hvdrun: " << message << "\nRun 'hvdrun --help' for the options.\n";
  return kUsageError;
}

// This program's own path, for the rank monitor on the launcher's command line (the
// same path on every node, as the command's own).
std::string own_path() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : path.string();
}

// Puts the rank monitor in front of the user's command (the last words of argv).
void monitor_each_rank(hvdrun::LaunchCommand* command, size_t user_words, const std::string& self) {
  auto at = command->argv.end() - static_cast<std::ptrdiff_t>(user_words);
  command->argv.insert(at, {self, hvdrun::kRankMonitorFlag, "--"});
}

}  // namespace

extern char** environ;

int main(int argc, char** argv) {
  using namespace hvdrun;
  if (argc >= 3 && std::string(argv[1]) == kRankMonitorFlag && std::string(argv[2]) == "--")
    return run_rank_monitor(argc - 3, argv + 3);
  std::vector<std::string> args(argv + 1, argv + argc);
  CliOutcome cli = parse_command_line(args);
  if (cli.kind == CliOutcome::Kind::Help) {
    std::cout << cli.text;
    return 0;
  }
  if (cli.kind == CliOutcome::Kind::Error) return usage_error(cli.text);
  const LaunchOptions& options = cli.options;

  if (options.version || options.check_build) {
    if (options.version) std::cout << version_report();
    if (options.check_build) std::cout << check_build_report();
    return 0;
  }

  auto library_flavor = flavor_from_version_text(hvd_mpi_library_version());
  std::string launcher = choose_launcher(std::getenv("HVDRUN_MPIEXEC"), library_flavor);
  auto flavor = detect_flavor(launcher);
  if (!flavor) {
    std::cerr << "hvdrun: " << flavor.error() << "\n";
    return kNoLauncher;
  }
  if (auto mismatch = launcher_mismatch(*flavor, library_flavor, launcher)) {
    // A launcher named explicitly is the user's choice (a wrapper, a test double):
    // warn. One found on PATH would silently start one-rank jobs: refuse.
    const char* explicit_launcher = std::getenv("HVDRUN_MPIEXEC");
    if (explicit_launcher && *explicit_launcher) {
      std::cerr << "hvdrun: warning: " << *mismatch << "\n";
    } else {
      std::cerr << "hvdrun: " << *mismatch << "\n";
      return kNoLauncher;
    }
  }

  PlanContext context;
  context.flavor = *flavor;
  context.launcher = launcher;
  context.running_as_root = ::geteuid() == 0;
  context.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    context.environment_names.emplace_back(entry.substr(0, entry.find('=')));
  }
  auto plan = make_plan(options, context);
  if (!plan) return usage_error(plan.error());
  for (const auto& w : plan->warnings) std::cerr << "hvdrun: warning: " << w << "\n";
  auto command = build_command(*plan);
  if (!command) return usage_error(command.error());

  std::string rendered = render_command(*command);
  if (options.dry_run) {
    std::cout << rendered << "\n";
    return 0;
  }
  if (options.verbose) std::cerr << "hvdrun: " << flavor_name(*flavor) << ": " << rendered << "\n";

  if (plan->output_dir) {
    // Hydra opens the per-rank files but does not create their directory.
    std::error_code ec;
    std::filesystem::create_directories(*plan->output_dir, ec);
    if (ec)
      return usage_error("--output-filename " + *plan->output_dir + ": cannot create it (" +
                         ec.message() + ")");
  }

  Status resolvable = check_hosts_resolve(plan->hosts, plan->mpi_args);
  if (!resolvable) return usage_error(resolvable.error());

  // Each rank runs under the monitor, so that hvdrun learns which rank failed first
  // (and ends a job whose other ranks would wait in MPI_Init for ever). Not with
  // --output-filename: the markers would land in the files, not here.
  LaunchCommand launched = *command;
  const std::string self = own_path();
  const bool watch_ranks = !plan->output_dir && !self.empty();
  if (watch_ranks) monitor_each_rank(&launched, plan->command.size(), self);

  std::cout.flush();
  std::cerr.flush();
  JobOutcome job = run_job(launched, watch_ranks);
  if (!job.started) {
    std::cerr << "hvdrun: " << job.error << "\n";
    return kNoLauncher;
  }
  if (job.first_failure && !job.forwarded_signal) {
    // The launcher's own summary may blame a rank it killed while cleaning up.
    std::cerr << "hvdrun: the job failed: " << describe_rank_exit(*job.first_failure)
              << " first; exiting with its status " << job.first_failure->shell_status() << "\n";
    return job.first_failure->shell_status();
  }
  return job.exit_status;
}
