#include "job.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include <poll.h>
#include <unistd.h>

#include "host_check.h"
#include "event_files.h"
#include "launch.h"
#include "output_folder.h"
#include "rank_monitor.h"

namespace hvdrun {
namespace {

// This program's own path, for the rank monitor on the launcher's command line (the
// same path on every node, as the command's own).
std::string own_path() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : path.string();
}

// Puts the rank monitor in front of the user's command (the last words of argv). With
// an events folder, the job's token reaches the monitors through the environment:
// Hydra passes the launcher's whole environment on; Open MPI only what -x names.
void monitor_each_rank(LaunchCommand* command, const LaunchPlan& plan, const std::string& self,
                       const std::string& events_dir) {
  auto at = command->argv.end() - static_cast<std::ptrdiff_t>(plan.command.size());
  if (events_dir.empty()) {
    command->argv.insert(at, {self, kRankMonitorFlag, "--"});
    return;
  }
  if (plan.flavor == MpiFlavor::OpenMpi) {
    at = command->argv.insert(at, {"-x", kEventsTokenVariable});
    at += 2;
  }
  command->argv.insert(at, {self, kRankMonitorFlag, kRankMonitorEventsFlag, events_dir, "--"});
}

// The output folder made, checked and readied for a job with --output-filename; the
// events folder made in it. A message for the user on failure.
Result<EventFolder> prepare_output_folder(const LaunchPlan& plan) {
  using R = Result<EventFolder>;
  const std::string& dir = *plan.output_dir;
  // Hydra opens the per-rank files but does not create their directory.
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return R::failure("--output-filename " + dir + ": cannot create it (" + ec.message() + ")");
  if (auto warning = shared_folder_warning(dir))
    std::cerr << "hvdrun: warning: --output-filename " << *warning << "\n";
  if (plan.flavor != MpiFlavor::OpenMpi) {
    Status claimed = claim_hydra_output_files(dir, plan.num_proc);
    if (!claimed) return R::failure("--output-filename " + dir + ": " + claimed.error());
  }
  auto events = EventFolder::create(dir);
  if (!events) return R::failure("--output-filename " + dir + ": " + events.error());
  return events;
}

// Whether hvdrun's stdout or stderr is a pipe whose reader has gone (poll reports an
// error on the writing end of such a pipe).
bool output_reader_gone() {
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    pollfd p{fd, 0, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLERR)) return true;
  }
  return false;
}

// The hosts ranks hvdrun stopped waiting for (JobOutcome::silent_ranks) were placed
// on, where known, in name order.
std::vector<std::string> silent_rank_hosts(const JobOutcome& outcome, const LaunchPlan& plan) {
  const auto by_host =
      planned_ranks_by_host(plan.hosts, plan.num_proc, plan.flavor, plan.binding_args.has_value());
  std::set<std::string> hosts;
  for (int rank : outcome.silent_ranks)
    for (size_t h = 0; h < by_host.size() && h < plan.hosts.size(); ++h)
      if (std::find(by_host[h].begin(), by_host[h].end(), rank) != by_host[h].end())
        hosts.insert(plan.hosts[h].host);
  return {hosts.begin(), hosts.end()};
}

// The last line for ranks hvdrun stopped waiting for: the hosts they were placed on,
// where known. Their status is not known: not 0.
std::pair<int, std::string> report_silent_ranks(const JobOutcome& outcome,
                                                const std::vector<std::string>& hosts) {
  std::string ranks, names;
  for (int rank : outcome.silent_ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
  for (const std::string& h : hosts) names += (names.empty() ? "" : ", ") + h;
  return {1, "hvdrun: the job failed: " + (names.empty() ? std::string("the node") : "host " + names) +
                " of rank(s) " + ranks +
                " stopped reaching the launcher after the other ranks had exited; their exit status is not "
                "known; exiting with status 1\n"};
}

// The last line names the lost hosts and their ranks. A rank that failed on its own
// is said first; one killed by a signal (Open MPI's mpirun ends the survivors with
// SIGTERM once it lost a daemon) is the launcher's cleanup, not the cause. Returns
// the status and the lines to print.
std::pair<int, std::string> report_lost_nodes(const std::vector<LostNode>& lost, const JobOutcome& outcome,
                                              const LaunchPlan& plan) {
  std::string text;
  if (outcome.first_failure && outcome.first_failure->signal != SIGTERM &&
      outcome.first_failure->signal != SIGKILL)
    text += "hvdrun: before that, " + describe_rank_exit(*outcome.first_failure) + "\n";
  const long family = outcome.loss_lines.job_family() ? *outcome.loss_lines.job_family() : outcome.job_family;
  if (plan.flavor == MpiFlavor::OpenMpi)
    for (const LostNode& node : lost) remove_lost_session_dir(node.host, family);
  const int status = outcome.exit_status != 0 ? outcome.exit_status : 1;
  const char* launcher = plan.flavor == MpiFlavor::OpenMpi ? "mpirun" : "mpiexec";
  text += "hvdrun: the job failed: " + describe_lost_nodes(lost) + ": " +
          (lost.size() == 1 ? "its processes ended" : "their processes ended") + " without a word and " +
          launcher + " lost its connection to " + (lost.size() == 1 ? "it" : "them") +
          "; exiting with status " + std::to_string(status) + "\n";
  return {status, text};
}

}  // namespace

int usage_error(const std::string& message) {
  std::cerr << "hvdrun: " << message << "\nRun 'hvdrun --help' for the options.\n";
  return kUsageError;
}

Result<PreparedJob> prepare_job(const LaunchOptions& options, const PlanContext& context) {
  using R = Result<PreparedJob>;
  auto plan = make_plan(options, context);
  if (!plan) return R::failure(plan.error());
  for (const auto& w : plan->warnings) std::cerr << "hvdrun: warning: " << w << "\n";
  if (options.verbose)
    for (const auto& n : plan->notes) std::cerr << "hvdrun: " << n << "\n";
  auto command = build_command(*plan);
  if (!command) return R::failure(command.error());
  return PreparedJob{std::move(plan).value(), std::move(command).value()};
}

JobReport run_prepared_job_report(const PreparedJob& job, const LaunchOptions& options,
                                  int64_t expected_ranks) {
  JobReport report;
  auto ends = [&report](int status) {
    report.status = status;
    return report;
  };
  const LaunchPlan& plan = job.plan;
  // Each rank runs under the monitor, so that hvdrun learns which rank failed first
  // (and ends a job whose other ranks would wait in MPI_Init for ever). With
  // --output-filename the ranks' stderr goes to files, so the monitors leave their
  // markers in a folder of their own beside them (on this machine or a shared file
  // system; a remote node's are lost, and its ranks are not watched).
  LaunchCommand launched = job.command;
  const std::string self = own_path();
  const bool watch_ranks = !self.empty();
  if (options.dry_run) {
    // The events folder's name is drawn when the job runs.
    if (watch_ranks)
      monitor_each_rank(&launched, plan, self,
                        plan.output_dir ? *plan.output_dir + "/" + kEventsFolderPrefix + "XXXXXX" : "");
    std::cout << render_command(launched) << "\n";
    report.started = true;
    return ends(0);
  }

  std::optional<EventFolder> events;
  if (plan.output_dir) {
    auto prepared = prepare_output_folder(plan);
    if (!prepared) return ends(usage_error(prepared.error()));
    events.emplace(std::move(prepared).value());
  }
  if (watch_ranks) monitor_each_rank(&launched, plan, self, events ? events->path() : "");
  // The command as it is run, rank monitor included; the token is not shown.
  if (options.verbose)
    std::cerr << "hvdrun: " << flavor_name(plan.flavor) << ": " << render_command(launched) << "\n";
  if (events) launched.launcher_env.emplace_back(kEventsTokenVariable, events->token());
  for (const auto& secret : job.secret_launcher_env) launched.launcher_env.push_back(secret);

  Status resolvable = check_hosts_resolve(plan.hosts, plan.mpi_args);
  if (!resolvable) return ends(usage_error(resolvable.error()));
  if (!plan.network_interfaces.empty() && ranks_run_here(plan.hosts, plan.mpi_args)) {
    Status present = check_network_interfaces(plan.network_interfaces, local_interfaces());
    if (!present) return ends(usage_error(present.error()));
  }

  std::cout.flush();
  std::cerr.flush();
  JobOutcome outcome = run_job(launched, watch_ranks, watch_ranks && events ? &*events : nullptr,
                               options.verbose, plan.num_proc, watch_ranks ? expected_ranks : 0);
  events.reset();
  if (!outcome.started) {
    std::cerr << "hvdrun: " << outcome.error << "\n";
    return ends(kNoLauncher);
  }
  report.started = true;
  report.forwarded_signal = outcome.forwarded_signal;
  report.failures = outcome.failures;
  report.ranks_ended = static_cast<int64_t>(outcome.ranks_reported.size());
  // `hvdrun ... | head`: the reader closed the pipe and the launcher, writing the ranks'
  // output to it, died: of SIGPIPE (Hydra), or of SIGSEGV (Open MPI 4.1's mpirun ignores
  // SIGPIPE and crashes on the failed write). Not a fault: hvdrun ends quietly with the
  // status a shell gives any program stopped that way, as other Unix tools do.
  if (outcome.launcher_crash_signal && output_reader_gone()) return ends(128 + SIGPIPE);
  if (outcome.launcher_crash_signal)
    std::cerr << "hvdrun: " << launched.argv[0] << " itself died of signal " << outcome.launcher_crash_signal
              << " (" << strsignal(outcome.launcher_crash_signal)
              << "), a fault of the MPI launcher; hvdrun killed the job's processes left on this host\n";
  if (!outcome.silent_ranks.empty() && !outcome.forwarded_signal) {
    report.silent_ranks = outcome.silent_ranks;
    report.silent_hosts = silent_rank_hosts(outcome, plan);
    auto [status, text] = report_silent_ranks(outcome, report.silent_hosts);
    report.verdict = text;
    return ends(status);
  }
  if (!outcome.forwarded_signal) {
    // Open MPI's daemon k serves the k-th host only when mpirun's own host is not one
    // of them (its ranks there are mpirun's): then no daemon is taken for a host.
    std::set<int> ended_first = outcome.proxies_ended_first;
    char here[256] = "";
    ::gethostname(here, sizeof here - 1);
    if (plan.flavor == MpiFlavor::OpenMpi)
      for (const HostSlots& h : plan.hosts)
        if (h.host == "localhost" || h.host == here || h.host.rfind("127.", 0) == 0) ended_first.clear();
    const auto lost = find_lost_nodes(
        outcome.loss_lines, ended_first, plan.hosts,
        planned_ranks_by_host(plan.hosts, plan.num_proc, plan.flavor, plan.binding_args.has_value()),
        outcome.ranks_reported);
    if (!lost.empty()) {
      report.lost = lost;
      auto [status, text] = report_lost_nodes(lost, outcome, plan);
      report.verdict = text;
      return ends(status);
    }
  }
  if (outcome.first_failure && !outcome.forwarded_signal) {
    // The launcher's own summary may blame a rank it killed while cleaning up.
    const RankExit& failed = *outcome.first_failure;
    report.verdict = "hvdrun: the job failed: " + describe_rank_exit(failed) +
                     (failed.left_peers_waiting ? "; exiting with status " : " first; exiting with its status ") +
                     std::to_string(failed.shell_status()) + "\n";
    return ends(failed.shell_status());
  }
  return ends(outcome.exit_status);
}

int run_prepared_job(const PreparedJob& job, const LaunchOptions& options) {
  const JobReport report = run_prepared_job_report(job, options);
  std::cerr << report.verdict;
  return report.status;
}

}  // namespace hvdrun
