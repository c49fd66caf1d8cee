// hvdrun: horovodrun's command line on top of the MPI launcher.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <hvd/hvd.h>

#include "check_build.h"
#include "cli.h"
#include "elastic_driver.h"
#include "job.h"
#include "mpi_detect.h"
#include "plan.h"
#include "rank_monitor.h"
#include "scaling.h"

extern char** environ;

namespace {

// This install's folder of the `horovod` stand-in, found relative to hvdrun as its
// RPATH finds libhvd (so that a moved install still finds it); empty when there is none
// (the build tree, a wheel).
std::string installed_horovod_compat_dir() {
  namespace fs = std::filesystem;
  const std::string from_bin = HVDRUN_HOROVOD_COMPAT_FROM_BIN;
  if (from_bin.empty()) return "";
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  fs::path dir = fs::weakly_canonical(self.parent_path() / from_bin, ec);
  return !ec && fs::is_directory(dir / "horovod", ec) ? dir.string() : "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hvdrun;
  if (argc >= 3 && std::string(argv[1]) == kRankMonitorFlag && std::string(argv[2]) == "--")
    return run_rank_monitor(argc - 3, argv + 3);
  if (argc >= 5 && std::string(argv[1]) == kRankMonitorFlag &&
      std::string(argv[2]) == kRankMonitorEventsFlag && std::string(argv[4]) == "--")
    return run_rank_monitor(argc - 5, argv + 5, argv[3]);
  std::vector<std::string> args(argv + 1, argv + argc);
  CliOutcome cli = parse_command_line(args);
  if (cli.kind == CliOutcome::Kind::Help) {
    std::cout << cli.text;
    return 0;
  }
  if (cli.kind == CliOutcome::Kind::Error) return usage_error(cli.text);
  const LaunchOptions& options = cli.options;
  for (const auto& note : options.notices) std::cerr << "hvdrun: note: " << note << "\n";

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
  context.horovod_compat_dir = installed_horovod_compat_dir();
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    context.environment_names.emplace_back(entry.substr(0, entry.find('=')));
  }

  if (options.scaling) return run_scaling(options, context);
  if (options.elastic) return run_elastic_job(options, context);
  auto job = prepare_job(options, context);
  if (!job) return usage_error(job.error());
  return run_prepared_job(*job, options);
}
