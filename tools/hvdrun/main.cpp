// hvdrun: horovodrun's command line on top of the MPI launcher.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "check_build.h"
#include "cli.h"
#include "command_builder.h"
#include "launch.h"
#include "mpi_detect.h"
#include "plan.h"

namespace {

constexpr int kUsageError = 2;
constexpr int kNoLauncher = 127;

int usage_error(const std::string& message) {
  std::cerr << "hvdrun: " << message << "\nRun 'hvdrun --help' for the options.\n";
  return kUsageError;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hvdrun;
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

  std::string launcher = choose_launcher(std::getenv("HVDRUN_MPIEXEC"));
  auto flavor = detect_flavor(launcher);
  if (!flavor) {
    std::cerr << "hvdrun: " << flavor.error() << "\n";
    return kNoLauncher;
  }

  PlanContext context;
  context.flavor = *flavor;
  context.launcher = launcher;
  context.running_as_root = ::geteuid() == 0;
  context.getenv = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
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

  std::cout.flush();
  std::cerr.flush();
  JobOutcome job = run_job(*command);
  if (!job.started) {
    std::cerr << "hvdrun: " << job.error << "\n";
    return kNoLauncher;
  }
  return job.exit_status;
}
