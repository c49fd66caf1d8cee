// The launch plan: the user's options checked and resolved (hosts parsed, slots
// counted, tuning flags turned into variables, -x values looked up) for one MPI
// implementation. Building it does no I/O except reading the hostfile.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "env_mapping.h"
#include "hosts.h"
#include "mpi_detect.h"
#include "options.h"
#include "result.h"

namespace hvdrun {

struct LaunchPlan {
  MpiFlavor flavor = MpiFlavor::Mpich;
  std::string launcher;                   // program to exec (mpiexec, mpirun, ...)
  int64_t num_proc = 1;
  HostList hosts;                         // empty: every rank on this machine
  EnvList rank_env;                       // NAME=value set in every rank
  std::vector<std::string> forward_names; // Open MPI only: -x NAME, value from here
  std::optional<std::vector<std::string>> binding_args;  // replaces the default
  std::vector<std::string> mpi_args;
  std::vector<std::string> network_interfaces;
  std::optional<int> ssh_port;
  std::optional<std::string> ssh_identity_file;
  std::optional<std::string> output_dir;
  bool timestamp_output = false;          // Open MPI: --timestamp-output
  // The rank before each line of output, as horovodrun shows it (Hydra -prepend-rank,
  // Open MPI --tag-output); not with per-rank files.
  bool rank_prefix = true;
  bool running_as_root = false;
  std::vector<std::string> command;
  std::vector<std::string> warnings;      // printed, not fatal
  std::vector<std::string> notes;         // printed with --verbose
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

struct PlanContext {
  MpiFlavor flavor = MpiFlavor::Mpich;
  std::string launcher = "mpiexec";
  bool running_as_root = false;
  EnvLookup getenv;  // the launcher's environment, for -x VAR
  // The names set in the launcher's environment; Open MPI ranks on other hosts see
  // only what -x names, so the ones libhvd and its libraries read are forwarded.
  std::vector<std::string> environment_names;
  // This install's folder of the `horovod` stand-in (python_path.h); empty if none.
  std::string horovod_compat_dir;
};

Result<LaunchPlan> make_plan(const LaunchOptions& options, const PlanContext& context);

// True if the user's MPI arguments allow more ranks than slots.
bool mpi_args_allow_oversubscription(const std::vector<std::string>& mpi_args);

}  // namespace hvdrun
