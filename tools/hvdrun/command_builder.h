// The launcher command line for a plan, one builder per MPI implementation.
#pragma once

#include <string>
#include <vector>

#include "env_mapping.h"
#include "plan.h"
#include "result.h"

namespace hvdrun {

struct LaunchCommand {
  std::vector<std::string> argv;  // argv[0] is the launcher
  EnvList launcher_env;           // set in the launcher's own environment
};

// MPICH Hydra: mpiexec -n N -hosts h:n,... -genv NAME value ... command
Result<LaunchCommand> build_mpich_command(const LaunchPlan& plan);
// Open MPI: mpirun -np N -H h:n,... --bind-to none --map-by slot -x NAME=value ... command
Result<LaunchCommand> build_openmpi_command(const LaunchPlan& plan);
// Intel MPI (Hydra-based): mpiexec -n N -hosts h,... -ppn n -genv NAME value ... command
Result<LaunchCommand> build_intel_command(const LaunchPlan& plan);

// Dispatches on plan.flavor.
Result<LaunchCommand> build_command(const LaunchPlan& plan);

// One line a user can paste into a shell: launcher variables, then the words quoted.
std::string render_command(const LaunchCommand& command);

// The per-rank output file patterns Hydra (MPICH, Intel MPI) is given for a dir.
std::string hydra_stdout_pattern(const std::string& dir);
std::string hydra_stderr_pattern(const std::string& dir);

}  // namespace hvdrun
