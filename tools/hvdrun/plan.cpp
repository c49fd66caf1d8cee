#include "plan.h"

#include <algorithm>
#include <cctype>

#include "python_path.h"
#include "shell_words.h"

namespace hvdrun {

namespace {

// Variables read by libhvd and the libraries under it, forwarded to Open MPI ranks.
bool is_forwarded_family(const std::string& name) {
  for (const char* prefix : {"HVD_", "HOROVOD_", "NCCL_", "CUDA_", "UCX_", "OMP_", "MKL_"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

bool mpi_args_allow_oversubscription(const std::vector<std::string>& mpi_args) {
  for (const auto& arg : mpi_args) {
    std::string lower(arg);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.find("oversubscribe") != std::string::npos) return true;
  }
  return false;
}

Result<LaunchPlan> make_plan(const LaunchOptions& o, const PlanContext& ctx) {
  using R = Result<LaunchPlan>;
  LaunchPlan plan;
  plan.flavor = ctx.flavor;
  plan.launcher = ctx.launcher;
  plan.running_as_root = ctx.running_as_root;
  plan.command = o.command;
  if (plan.command.empty()) return R::failure("no command to run");

  if (o.hosts) {
    auto hosts = parse_host_list(*o.hosts);
    if (!hosts) return R::failure(hosts.error());
    plan.hosts = std::move(hosts).value();
  } else if (o.hostfile) {
    auto hosts = read_hostfile(*o.hostfile, &plan.warnings);
    if (!hosts) return R::failure(hosts.error());
    plan.hosts = std::move(hosts).value();
  }

  if (o.mpi_args) {
    auto words = split_shell_words(*o.mpi_args);
    if (!words) return R::failure("--mpi-args: " + words.error());
    plan.mpi_args = std::move(words).value();
  }
  if (o.binding_args) {
    auto words = split_shell_words(*o.binding_args);
    if (!words) return R::failure("--binding-args: " + words.error());
    plan.binding_args = std::move(words).value();
  }

  int64_t slots = total_slots(plan.hosts);
  if (o.num_proc) {
    plan.num_proc = *o.num_proc;
    if (plan.num_proc < 1)
      return R::failure("-np " + std::to_string(plan.num_proc) +
                        ": the number of processes must be at least 1");
  } else if (slots > 0) {
    plan.num_proc = slots;
  } else {
    return R::failure("-np is missing: say how many processes to start");
  }
  if (!plan.hosts.empty() && plan.num_proc > slots &&
      !mpi_args_allow_oversubscription(plan.mpi_args)) {
    std::string source = o.hosts ? "-H " + *o.hosts : "hostfile " + *o.hostfile;
    return R::failure("-np " + std::to_string(plan.num_proc) + " is more than the " +
                      std::to_string(slots) + " slot" + (slots == 1 ? "" : "s") + " of " +
                      source + "; lower -np, add slots" +
                      (ctx.flavor == MpiFlavor::OpenMpi
                           ? ", or pass --mpi-args=--oversubscribe"
                           : std::string()));
  }

  auto tuning = tuning_environment(o.tuning);
  if (!tuning) return R::failure(tuning.error());
  plan.rank_env = std::move(tuning).value();

  if (o.network_interface) {
    std::string nic;
    for (char c : *o.network_interface + ",") {
      if (c == ',' || c == ' ' || c == '\t') {
        if (!nic.empty()) plan.network_interfaces.push_back(nic);
        nic.clear();
      } else {
        nic += c;
      }
    }
    if (plan.network_interfaces.empty())
      return R::failure("--network-interface '" + *o.network_interface +
                        "': give one or more interface names separated by commas, e.g. eth0");
    std::string joined;
    for (const auto& name : plan.network_interfaces) joined += (joined.empty() ? "" : ",") + name;
    set_env(plan.rank_env, "NCCL_SOCKET_IFNAME", joined);
    // UCX (MPICH's ch4:ucx, Open MPI's pml ucx) otherwise opens every interface it
    // finds, whatever Hydra's -iface or Open MPI's btl_tcp_if_include say. A UCX RDMA
    // device has a name of its own (mlx5_0:1): -x UCX_NET_DEVICES=... below wins.
    set_env(plan.rank_env, "UCX_NET_DEVICES", joined);
  }

  // horovodrun --tcp: NCCL stays off InfiniBand (what horovodrun sets for every MPI but
  // IBM's Spectrum MPI, whose TCP flags do not apply here).
  if (o.tcp_only) set_env(plan.rank_env, "NCCL_IB_DISABLE", "1");

  // -x comes last so that an explicit value wins over a tuning flag's.
  for (const auto& e : o.env) {
    if (e.value) {
      set_env(plan.rank_env, e.name, *e.value);
      continue;
    }
    std::optional<std::string> here = ctx.getenv ? ctx.getenv(e.name) : std::nullopt;
    if (!here) {
      plan.warnings.push_back("-x " + e.name + ": " + e.name +
                              " is not set here, so it is not passed on");
      continue;
    }
    if (ctx.flavor == MpiFlavor::OpenMpi) {
      // Open MPI copies the value itself, which keeps it out of --verbose output.
      if (std::find(plan.forward_names.begin(), plan.forward_names.end(), e.name) ==
          plan.forward_names.end())
        plan.forward_names.push_back(e.name);
    } else {
      set_env(plan.rank_env, e.name, *here);
    }
  }

  // The ranks' PYTHONPATH (the launcher's, or one -x gave) reaching this install's
  // packages without its `horovod` stand-in: add the stand-in's folder.
  if (!ctx.horovod_compat_dir.empty()) {
    std::optional<std::string> pythonpath;
    for (const auto& [name, value] : plan.rank_env)
      if (name == "PYTHONPATH") pythonpath = value;
    if (!pythonpath && ctx.getenv) pythonpath = ctx.getenv("PYTHONPATH");
    if (auto with_compat = pythonpath_with_horovod_compat(pythonpath.value_or(""),
                                                          ctx.horovod_compat_dir)) {
      set_env(plan.rank_env, "PYTHONPATH", *with_compat);
      std::erase(plan.forward_names, std::string("PYTHONPATH"));
      plan.notes.push_back("PYTHONPATH names this install's site folder but not " +
                           ctx.horovod_compat_dir +
                           ", which holds its `horovod` (a .pth file adds it only in a site "
                           "folder Python searches by itself): added for the ranks");
    }
  }

  if (ctx.flavor == MpiFlavor::OpenMpi) {
    // Remote Open MPI ranks see only what -x names; these are what a job needs to
    // find its interpreter and libraries, and every knob of libhvd and of the
    // libraries below it (HVD_LIBRARY, HOROVOD_*, NCCL_*, ...).
    auto forward = [&](const std::string& name) {
      bool named = std::any_of(plan.rank_env.begin(), plan.rank_env.end(),
                               [&](const auto& e) { return e.first == name; }) ||
                   std::find(plan.forward_names.begin(), plan.forward_names.end(), name) !=
                       plan.forward_names.end();
      if (!named) plan.forward_names.push_back(name);
    };
    for (const char* common : {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH"})
      if (ctx.getenv && ctx.getenv(common)) forward(common);
    for (const auto& name : ctx.environment_names)
      if (is_forwarded_family(name)) forward(name);
  }

  plan.ssh_port = o.ssh_port;
  plan.ssh_identity_file = o.ssh_identity_file;
  plan.output_dir = o.output_filename;
  plan.rank_prefix = o.rank_prefix && !plan.output_dir;
  if (o.timestamp_output) {
    if (ctx.flavor == MpiFlavor::OpenMpi)
      plan.timestamp_output = true;
    else
      plan.warnings.push_back("--prefix-output-with-timestamp: Hydra (MPICH, Intel MPI) cannot "
                              "put the time on the ranks' lines; they are printed without it");
  }
  if (plan.output_dir && ctx.flavor != MpiFlavor::OpenMpi &&
      plan.output_dir->find('%') != std::string::npos)
    return R::failure("--output-filename " + *plan.output_dir +
                      ": '%' is not allowed in the directory name with Hydra, which reads it "
                      "as a pattern");
  return plan;
}

}  // namespace hvdrun
