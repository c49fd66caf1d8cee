#include "scaling.h"

#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <iostream>

#include "base/atomic_file.h"
#include "host_check.h"
#include "job.h"
#include "plot_interpreter.h"
#include "scaling_report.h"
#include "shell_words.h"

extern char** environ;

namespace hvdrun {
namespace {

namespace fs = std::filesystem;

constexpr int kReportFailed = 1;

// The folder for the runs' summaries, removed with this object. Rank 0 writes its
// summary on the first host: /tmp when that is this machine, else the current folder,
// which a cluster shares with its nodes as it shares the program.
class SummaryDir {
 public:
  explicit SummaryDir(bool local) {
    std::string base = local ? (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp")
                             : fs::current_path().string();
    std::string pattern = base + "/hvdrun-scaling.XXXXXX";
    if (::mkdtemp(pattern.data())) path_ = pattern;
  }
  ~SummaryDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  SummaryDir(const SummaryDir&) = delete;
  SummaryDir& operator=(const SummaryDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ranks_text(int64_t n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

// The user's hosts (-H or --hostfile); empty when none were given.
Result<HostList> user_hosts(const LaunchOptions& o) {
  if (o.hosts) return parse_host_list(*o.hosts);
  if (o.hostfile) return read_hostfile(*o.hostfile);
  return HostList{};
}

// The options of the run on n ranks: the first n slots of the user's hosts (or n on
// this machine), and the summary file.
LaunchOptions options_for_size(const LaunchOptions& o, const HostList& hosts, int64_t n,
                               const std::string& summary_file) {
  LaunchOptions run = o;
  run.scaling.reset();
  run.num_proc = n;
  run.hostfile.reset();
  run.hosts = format_host_list(hosts.empty() ? HostList{{"localhost", n}}
                                             : first_slots(hosts, n));
  run.env.push_back({"HVD_SUMMARY_FILE", summary_file});
  if (o.scaling->steps) run.env.push_back({"HVD_STEP_STATS_STEPS", std::to_string(*o.scaling->steps)});
  return run;
}

// Checks what a run reported against what was asked of it.
Result<RunSummary> read_summary(const std::string& path, int64_t n, const std::string& program) {
  using R = Result<RunSummary>;
  std::error_code ec;
  if (!fs::exists(path, ec))
    return R::failure("the run on " + ranks_text(n) + " wrote no step summary: " + program +
                      " must use libhvd (a version that writes HVD_SUMMARY_FILE) and shut it "
                      "down (hvd_shutdown, or a normal exit) on rank 0");
  auto summary = read_run_summary(path);
  if (!summary) return R::failure("the run on " + ranks_text(n) + ": " + summary.error());
  if (summary->ranks != n)
    return R::failure("the run on " + ranks_text(n) + " reported " + ranks_text(summary->ranks) +
                      ": the ranks did not form one job (an MPI other than libhvd's?)");
  if (summary->steps < 1 || summary->step_seconds <= 0)
    return R::failure("the run on " + ranks_text(n) +
                      " measured no steps: let the program run more steps (or lower --steps)");
  return summary;
}

// Whole, never through a link planted at path (base/atomic_file.h); *error says why not.
bool write_file(const std::string& path, const std::string& text, std::string* error) {
  return hvd::write_file_atomically(path, text, error);
}

// The plotting script: beside hvdrun in the build tree, in the data folder of an
// install (found relative to hvdrun, so the install may move), or where it was
// installed.
std::string find_plot_script() {
  const std::string name = "hvdrun-scaling-plot.py";
  std::vector<std::string> candidates;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back((self.parent_path() / name).string());
    candidates.push_back((self.parent_path() / HVDRUN_DATA_RELATIVE_DIR / name).string());
  }
  candidates.push_back(std::string(HVDRUN_DATA_INSTALL_DIR) + "/" + name);
  for (const auto& c : candidates)
    if (fs::is_regular_file(c, ec)) return c;
  return "";
}

// Runs PYTHON SCRIPT JSON PNG ORIGIN; its status (127 when the interpreter cannot be
// run).
int run_python(const PlotInterpreter& python, const std::string& script, const std::string& json,
               const std::string& png) {
  std::vector<std::string> words = {python.program, script, json, png, python.origin};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return 127;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int draw_plot(const ScalingReport& report, const std::string& png, const std::string& tmp_dir,
              const std::vector<std::string>& command) {
  std::string script = find_plot_script();
  if (script.empty()) {
    std::cerr << "hvdrun: --plot: hvdrun-scaling-plot.py is not installed beside hvdrun\n";
    return kReportFailed;
  }
  std::string json = tmp_dir + "/report.json";
  std::string why;
  if (!write_file(json, scaling_report_json(report), &why)) {
    std::cerr << "hvdrun: --plot: " << why << "\n";
    return kReportFailed;
  }
  const PlotInterpreter python = choose_plot_interpreter(command, std::getenv("HVDRUN_PYTHON"));
  int status = run_python(python, script, json, png);
  if (status == 127) {
    std::cerr << "hvdrun: --plot: cannot run " << python.program << " (" << python.origin
              << "); set HVDRUN_PYTHON to an interpreter with matplotlib\n";
    return kReportFailed;
  }
  // The script says what went wrong (matplotlib missing, the file not writable), naming
  // the interpreter and why it was chosen.
  return status == 0 ? 0 : kReportFailed;
}

}  // namespace

int run_scaling(const LaunchOptions& options, const PlanContext& context) {
  const ScalingOptions& sc = *options.scaling;
  auto hosts = user_hosts(options);
  if (!hosts) return usage_error(hosts.error());
  SummaryDir dir(hosts->empty() || is_this_machine(hosts->front().host));
  if (dir.path().empty()) {
    std::cerr << "hvdrun: --scaling: cannot create a temporary folder for the summaries\n";
    return kReportFailed;
  }

  bool oversubscribe = false;
  if (options.mpi_args) {
    auto words = split_shell_words(*options.mpi_args);
    oversubscribe = words && mpi_args_allow_oversubscription(*words);
  }
  // Every size is planned before any runs, so that a bad option stops nothing midway.
  std::vector<PreparedJob> jobs;
  for (int64_t n : sc.sizes) {
    if (!hosts->empty() && n > total_slots(*hosts) && !oversubscribe) {
      return usage_error("--scaling: " + ranks_text(n) + " need " + std::to_string(n) +
                         " slots; " + (options.hosts ? "-H " + *options.hosts
                                                     : "hostfile " + *options.hostfile) +
                         " has " + std::to_string(total_slots(*hosts)));
    }
    std::string file = dir.path() + "/summary-" + std::to_string(n) + ".json";
    auto job = prepare_job(options_for_size(options, *hosts, n, file), context);
    if (!job) return usage_error("--scaling, " + ranks_text(n) + ": " + job.error());
    jobs.push_back(std::move(job).value());
  }

  std::vector<RunSummary> runs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const int64_t n = sc.sizes[i];
    if (!options.dry_run)
      std::cerr << "hvdrun: --scaling: run " << i + 1 << " of " << jobs.size() << ", on "
                << ranks_text(n) << "\n";
    int status = run_prepared_job(jobs[i], options);
    if (status != 0) {
      std::cerr << "hvdrun: --scaling: the run on " << ranks_text(n)
                << " failed with exit status " << status << "; stopping\n";
      return status;
    }
    if (options.dry_run) continue;
    std::string program = shell_join(options.command);
    if (program.size() > 60) program = program.substr(0, 57) + "...";
    auto summary = read_summary(dir.path() + "/summary-" + std::to_string(n) + ".json", n,
                                "'" + program + "'");
    if (!summary) {
      std::cerr << "hvdrun: --scaling: " << summary.error() << "\n";
      return kReportFailed;
    }
    runs.push_back(std::move(summary).value());
  }
  if (options.dry_run) return 0;

  CostInputs inputs{sc.samples_per_step, sc.price_per_hour, sc.hours, sc.time_value};
  ScalingReport report = make_scaling_report(std::move(runs), inputs);
  std::cout << "\n" << format_scaling_table(report) << std::flush;

  int status = 0;
  std::string why;
  if (sc.json_file && !write_file(*sc.json_file, scaling_report_json(report), &why)) {
    std::cerr << "hvdrun: --json: " << why << "\n";
    status = kReportFailed;
  }
  if (sc.plot_file && draw_plot(report, *sc.plot_file, dir.path(), options.command) != 0) status = kReportFailed;
  return status;
}

}  // namespace hvdrun
