// MPICH's Hydra mpiexec. Hydra passes the launcher's whole environment to the
// ranks by default, so only variables that differ from it need -genv. Hydra binds
// nothing unless asked, and "-map-by slot" is not added: with a -bind-to other than
// none it would pack ranks onto the first cores.
#include "command_builder.h"

namespace hvdrun {

Result<LaunchCommand> build_mpich_command(const LaunchPlan& plan) {
  LaunchCommand cmd;
  auto& a = cmd.argv;
  a = {plan.launcher, "-n", std::to_string(plan.num_proc)};
  if (!plan.hosts.empty()) {
    a.push_back("-hosts");
    a.push_back(format_host_list(plan.hosts));
  }
  if (plan.binding_args) a.insert(a.end(), plan.binding_args->begin(), plan.binding_args->end());
  // Hydra takes one interface; NCCL_SOCKET_IFNAME (in rank_env) gets them all.
  if (!plan.network_interfaces.empty()) {
    a.push_back("-iface");
    a.push_back(plan.network_interfaces.front());
  }
  // Hydra's ssh launcher has no option for ssh's own arguments; it reads them here.
  std::string ssh_extra;
  if (plan.ssh_port) ssh_extra = "-p " + std::to_string(*plan.ssh_port);
  if (plan.ssh_identity_file)
    ssh_extra += (ssh_extra.empty() ? "" : " ") + std::string("-i ") + *plan.ssh_identity_file;
  if (!ssh_extra.empty()) cmd.launcher_env.emplace_back("HYDRA_LAUNCHER_EXTRA_ARGS", ssh_extra);
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
