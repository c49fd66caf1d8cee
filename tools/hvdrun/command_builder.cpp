#include "command_builder.h"

#include "shell_words.h"

namespace hvdrun {

std::string hydra_stdout_pattern(const std::string& dir) { return dir + "/rank.%r.stdout"; }
std::string hydra_stderr_pattern(const std::string& dir) { return dir + "/rank.%r.stderr"; }

Result<LaunchCommand> build_command(const LaunchPlan& plan) {
  switch (plan.flavor) {
    case MpiFlavor::Mpich: return build_mpich_command(plan);
    case MpiFlavor::OpenMpi: return build_openmpi_command(plan);
    case MpiFlavor::IntelMpi: return build_intel_command(plan);
  }
  return Result<LaunchCommand>::failure("unknown MPI implementation");
}

std::string render_command(const LaunchCommand& command) {
  std::string out;
  for (const auto& [name, value] : command.launcher_env) out += name + "=" + shell_quote(value) + " ";
  return out + shell_join(command.argv);
}

}  // namespace hvdrun
