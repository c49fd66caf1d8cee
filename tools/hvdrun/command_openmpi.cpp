// Open MPI's mpirun. Locally started ranks inherit mpirun's environment, remote
// ones get only what -x names (the plan adds PATH, LD_LIBRARY_PATH and PYTHONPATH).
// Without -H, "-H localhost:N" keeps mpirun from refusing more ranks than cores.
#include "command_builder.h"

namespace hvdrun {

Result<LaunchCommand> build_openmpi_command(const LaunchPlan& plan) {
  LaunchCommand cmd;
  auto& a = cmd.argv;
  a.push_back(plan.launcher);
  if (plan.running_as_root) a.push_back("--allow-run-as-root");
  a.push_back("-np");
  a.push_back(std::to_string(plan.num_proc));
  a.push_back("-H");
  a.push_back(plan.hosts.empty() ? "localhost:" + std::to_string(plan.num_proc)
                                 : format_host_list(plan.hosts));
  if (plan.binding_args) {
    a.insert(a.end(), plan.binding_args->begin(), plan.binding_args->end());
  } else {
    for (const char* w : {"--bind-to", "none", "--map-by", "slot"}) a.push_back(w);
  }
  if (!plan.network_interfaces.empty()) {
    std::string nics;
    for (const auto& n : plan.network_interfaces) nics += (nics.empty() ? "" : ",") + n;
    for (const std::string& w : {std::string("-mca"), std::string("btl_tcp_if_include"), nics})
      a.push_back(w);
  }
  std::string ssh_args;
  if (plan.ssh_port) ssh_args = "-p " + std::to_string(*plan.ssh_port);
  if (plan.ssh_identity_file)
    ssh_args += (ssh_args.empty() ? "" : " ") + std::string("-i ") + *plan.ssh_identity_file;
  if (!ssh_args.empty()) {
    for (const std::string& w : {std::string("-mca"), std::string("plm_rsh_args"), ssh_args})
      a.push_back(w);
  }
  if (plan.rank_prefix) a.push_back("--tag-output");
  if (plan.timestamp_output) a.push_back("--timestamp-output");
  if (plan.output_dir) {
    // Only to the files, as with Hydra: Open MPI also copies to the terminal unless told.
    a.push_back("--output-filename");
    a.push_back(*plan.output_dir + ":nocopy");
  }
  for (const auto& [name, value] : plan.rank_env) {
    a.push_back("-x");
    a.push_back(name + "=" + value);
  }
  for (const auto& name : plan.forward_names) {
    a.push_back("-x");
    a.push_back(name);
  }
  a.insert(a.end(), plan.mpi_args.begin(), plan.mpi_args.end());
  a.insert(a.end(), plan.command.begin(), plan.command.end());
  return cmd;
}

}  // namespace hvdrun
