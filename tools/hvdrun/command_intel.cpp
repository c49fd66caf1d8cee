// Intel MPI's mpiexec (Hydra-based, with its own host syntax): hosts by name and
// one -ppn for all of them, so every host must have the same slots. Intel MPI pins
// ranks itself; no binding arguments are added unless the user gives some.
#include "command_builder.h"

namespace hvdrun {

Result<LaunchCommand> build_intel_command(const LaunchPlan& plan) {
  LaunchCommand cmd;
  auto& a = cmd.argv;
  a = {plan.launcher, "-n", std::to_string(plan.num_proc)};
  if (!plan.hosts.empty()) {
    int64_t ppn = plan.hosts.front().slots;
    std::string names;
    for (const auto& h : plan.hosts) {
      if (h.slots != ppn)
        return Result<LaunchCommand>::failure(
            "Intel MPI needs the same slots on every host, but " + plan.hosts.front().host +
            " has " + std::to_string(ppn) + " and " + h.host + " has " +
            std::to_string(h.slots) + "; give equal slots, or a machine file through "
            "--mpi-args \"-machinefile FILE\" without -H");
      names += (names.empty() ? "" : ",") + h.host;
    }
    for (const std::string& w : {std::string("-hosts"), names, std::string("-ppn"),
                                 std::to_string(ppn)})
      a.push_back(w);
  }
  if (plan.binding_args) a.insert(a.end(), plan.binding_args->begin(), plan.binding_args->end());
  if (!plan.network_interfaces.empty()) {
    a.push_back("-iface");
    a.push_back(plan.network_interfaces.front());
  }
  std::string ssh_args;
  if (plan.ssh_port) ssh_args = "-p " + std::to_string(*plan.ssh_port);
  if (plan.ssh_identity_file)
    ssh_args += (ssh_args.empty() ? "" : " ") + std::string("-i ") + *plan.ssh_identity_file;
  if (!ssh_args.empty()) {
    for (const std::string& w : {std::string("-bootstrap"), std::string("ssh"),
                                 std::string("-bootstrap-exec-args"), ssh_args})
      a.push_back(w);
  }
  if (plan.rank_prefix) a.push_back("-prepend-rank");
  if (plan.output_dir) {
    a.push_back("-outfile-pattern");
    a.push_back(hydra_stdout_pattern(*plan.output_dir));
    a.push_back("-errfile-pattern");
    a.push_back(hydra_stderr_pattern(*plan.output_dir));
  }
  for (const auto& [name, value] : plan.rank_env) {
    a.push_back("-genv");
    a.push_back(name);
    a.push_back(value);
  }
  a.insert(a.end(), plan.mpi_args.begin(), plan.mpi_args.end());
  a.insert(a.end(), plan.command.begin(), plan.command.end());
  return cmd;
}

}  // namespace hvdrun
