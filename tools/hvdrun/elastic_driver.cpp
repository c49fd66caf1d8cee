#include "elastic_driver.h"

#include <pthread.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "elastic_discovery.h"
#include "elastic_hosts.h"
#include "elastic_listener.h"
#include "elastic_outcome.h"
#include "event_files.h"
#include "host_check.h"
#include "job.h"
#include "shell_words.h"

namespace hvdrun {
namespace {

double monotonic_seconds() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

double random01() {
  uint32_t r = 0;
  if (::getrandom(&r, sizeof r, 0) != sizeof r) return 0.5;
  return r / 4294967296.0;
}

// A signal that asks hvdrun to stop, seen while no generation runs (a generation's
// launcher gets it from run_job, which then reports it).
volatile sig_atomic_t g_stop_signal = 0;
void note_stop(int sig) { g_stop_signal = sig; }
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};

std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// What hvdrun and the discovery thread share.
struct Shared {
  std::mutex mutex;
  std::condition_variable changed;
  ElasticHosts hosts;
  HostList running;                // the running generation's ranks per host; empty between
  HostList notified_for;           // the available hosts last notified in this generation
  bool stop = false;
  explicit Shared(std::optional<std::pair<int64_t, int64_t>> cooldown) : hosts(cooldown) {}
};

// Runs the discovery script every kDiscoveryIntervalSeconds, keeps the last good list
// (a failure is a warning), and tells the generation's rank 0 of a change that should
// change the job.
void discover(Shared* shared, ElasticListener* listener, const ElasticOptions& e, bool verbose) {
  std::string last_problem;
  std::unique_lock<std::mutex> lock(shared->mutex);
  while (!shared->stop) {
    shared->changed.wait_for(lock, std::chrono::duration<double>(kDiscoveryIntervalSeconds),
                             [shared] { return shared->stop; });
    if (shared->stop) break;
    lock.unlock();
    auto found = run_discovery_script(e.discovery_script, e.slots_per_host.value_or(1));
    lock.lock();
    if (!found) {
      if (found.error() != last_problem)
        std::cerr << "hvdrun: warning: elastic: the host discovery script " + found.error() +
                         "; keeping the last hosts it gave (" +
                         describe_hosts(shared->hosts.discovered_hosts()) + ")\n";
      last_problem = found.error();
      continue;
    }
    last_problem.clear();
    if (verbose && *found != shared->hosts.discovered_hosts())
      std::cerr << "hvdrun: elastic: discovered " +
                       (found->empty() ? std::string("no host") : describe_hosts(*found)) + "\n";
    shared->hosts.discovered(*found);
    const HostList available = shared->hosts.available(monotonic_seconds());
    if (!shared->running.empty() && available != shared->notified_for) {
      const int result = host_update_result(shared->running, available, e.max_np);
      if (result != kNoUpdate) {
        listener->hosts_updated(result);
        shared->notified_for = available;
        std::cerr << "hvdrun: elastic: hosts changed (now " +
                         (available.empty() ? std::string("none") : describe_hosts(available)) +
                         "): telling the ranks to move to a new generation\n";
      }
    }
    shared->changed.notify_all();
  }
}

}  // namespace

int run_elastic_job(const LaunchOptions& options, const PlanContext& context) {
  const ElasticOptions& e = *options.elastic;
  const int64_t start_np = *options.num_proc, min_np = *e.min_np;
  auto first = run_discovery_script(e.discovery_script, e.slots_per_host.value_or(1));
  if (!first) {
    std::cerr << "hvdrun: elastic: the host discovery script '" << e.discovery_script << "' "
              << first.error() << " on its first run; fix it (run it by hand: it prints the "
              << "available hosts, one 'host:slots' a line) and start the job again\n";
    return kUsageError;
  }
  const std::string token = random_token();
  if (token.empty()) {
    std::cerr << "hvdrun: elastic: the kernel gave no random bytes for the job's token\n";
    return 1;
  }
  auto started = ElasticListener::start(token);
  if (!started) {
    std::cerr << "hvdrun: elastic: " << started.error() << "\n";
    return 1;
  }
  ElasticListener& listener = **started;
  // The job's own name for the state folder, not its token: /dev/shm is listed by all.
  const std::string state_dir =
      "/dev/shm/hvd-elastic-" + std::to_string(::getuid()) + "-" + random_token().substr(0, 16);
  const char* address_env = std::getenv("HVDRUN_ELASTIC_ADDRESS");
  const std::optional<std::string> address_override =
      address_env ? std::optional<std::string>(address_env) : std::nullopt;

  // What the generations' plans split --mpi-args into: it says whether host names are
  // resolved by hvdrun's launcher (a malformed text fails the first plan).
  std::vector<std::string> mpi_args;
  if (options.mpi_args)
    if (auto words = split_shell_words(*options.mpi_args)) mpi_args = std::move(words).value();

  Shared shared(e.cooldown_range);
  shared.hosts.discovered(*first);
  // The discovery thread takes no stop signal: run_job holds them in this thread while
  // it starts a generation, and a handler run there would find no job to pass it to.
  sigset_t stop_set, old_mask;
  sigemptyset(&stop_set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&stop_set, sig);
  ::pthread_sigmask(SIG_BLOCK, &stop_set, &old_mask);
  std::thread discovery(discover, &shared, &listener, std::cref(e), options.verbose);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);

  struct sigaction action {}, old_actions[3];
  action.sa_handler = note_stop;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < 3; ++i) {
    ::sigaction(kStopSignals[i], nullptr, &old_actions[i]);
    if (old_actions[i].sa_handler != SIG_IGN) ::sigaction(kStopSignals[i], &action, nullptr);
  }
  auto finish = [&](int status) {
    {
      std::lock_guard<std::mutex> lock(shared.mutex);
      shared.stop = true;
    }
    shared.changed.notify_all();
    discovery.join();
    for (size_t i = 0; i < 3; ++i) ::sigaction(kStopSignals[i], &old_actions[i], nullptr);
    std::error_code ec;
    std::filesystem::remove_all(state_dir, ec);
    return status;
  };

  int64_t failures = 0;
  std::string after;  // why this generation follows the last
  HostList previous;  // the last generation's hosts: they hold the committed state
  for (int64_t generation = 0;; ++generation) {
    // Enough slots: -np for the first generation, --min-np after; and one host of the
    // last generation among them, or its committed state could not reach the new ones
    // (Horovod ends the job then; hvdrun waits for one to come back).
    const int64_t needed = generation == 0 ? start_np : min_np;
    const char* needed_flag = generation == 0 ? "-np" : "--min-np";
    HostList ranks;
    {
      std::unique_lock<std::mutex> lock(shared.mutex);
      const double deadline = monotonic_seconds() + e.elastic_timeout_s;
      bool announced = false;
      for (;;) {
        const HostList available = shared.hosts.available(monotonic_seconds());
        const int64_t slots = total_slots(available);
        const HostList candidate = assign_ranks(available, e.max_np);
        const bool enough = slots >= needed;
        auto was_in_previous = [&previous](const HostSlots& h) {
          return std::any_of(previous.begin(), previous.end(),
                             [&h](const HostSlots& p) { return p.host == h.host; });
        };
        const bool keeps_state =
            previous.empty() || std::any_of(candidate.begin(), candidate.end(), was_in_previous);
        if (enough && keeps_state) {
          // A host gone from DNS (a spot machine reclaimed) is a failed host, not a
          // mistyped one: it is left out, and the ranks placed again without it.
          lock.unlock();
          const auto unresolved = unresolvable_hosts(candidate, mpi_args);
          lock.lock();
          if (unresolved.empty()) {
            ranks = candidate;
            break;
          }
          for (const auto& [host, why] : unresolved) {
            const double seconds = shared.hosts.blacklist(host, monotonic_seconds(), random01());
            char out_for[64] = "for the rest of the job";
            if (seconds >= 0) std::snprintf(out_for, sizeof out_for, "for %.1f s", seconds);
            std::cerr << "hvdrun: warning: elastic: host " << host << " from the discovery script does not "
                      << "resolve (" << why << "); it is left out " << out_for << "\n";
          }
          continue;
        }
        if (g_stop_signal) {
          lock.unlock();
          std::cerr << "hvdrun: elastic: " << strsignal(g_stop_signal) << " while waiting for hosts; the job ends\n";
          return finish(128 + g_stop_signal);
        }
        std::string seen = "have " + plural(slots, "slot", "slots") +
                           (available.empty() ? std::string() : " (" + describe_hosts(available) + ")");
        std::string out;
        for (const std::string& h : shared.hosts.blacklisted(monotonic_seconds()))
          out += (out.empty() ? "" : ", ") + h;
        if (!out.empty()) seen += "; left out after failures: " + out;
        const std::string want =
            enough ? "one of the last generation's hosts (" + describe_hosts(previous) +
                         "), which hold the committed state"
                   : plural(needed, "slot", "slots") + " (" + needed_flag + ")";
        if (monotonic_seconds() >= deadline) {
          lock.unlock();
          std::cerr << "hvdrun: elastic: the job ends: it needs " << want << (enough ? "," : "") << " and had "
                    << (enough ? "none" : "fewer") << " for " << e.elastic_timeout_s
                    << " s (--elastic-timeout): " << seen << ". "
                    << (enough ? std::string("Its state would start over on new hosts: restart the job "
                                             "from a checkpoint")
                               : std::string("Add hosts, lower ") + needed_flag +
                                     " or raise --elastic-timeout")
                    << "\n";
          return finish(1);
        }
        if (!announced) {
          std::cerr << "hvdrun: elastic: waiting up to " << e.elastic_timeout_s << " s for " << want
                    << ": " << seen << "\n";
          announced = true;
        }
        shared.changed.wait_for(lock, std::chrono::milliseconds(200));
      }
      shared.running = ranks;
      shared.notified_for = shared.hosts.available(monotonic_seconds());
    }
    const int64_t np = total_slots(ranks);
    previous = ranks;
    listener.new_generation(generation);

    // The generation's job, planned as a non-elastic run on its hosts.
    LaunchOptions g = options;
    g.elastic.reset();
    g.hosts = format_host_list(ranks);
    g.num_proc = np;
    auto plan = make_plan(g, context);
    if (!plan) {
      std::cerr << "hvdrun: " << plan.error() << "\n";
      return finish(kUsageError);
    }
    if (generation == 0)
      for (const auto& w : plan->warnings) std::cerr << "hvdrun: warning: " << w << "\n";
    auto address = advertised_address(ranks, plan->network_interfaces, address_override);
    if (!address) {
      std::cerr << "hvdrun: elastic: " << address.error() << "\n";
      return finish(1);
    }
    set_env(plan.value().rank_env, "HOROVOD_ELASTIC", "1");
    set_env(plan.value().rank_env, "HVD_ELASTIC_GENERATION", std::to_string(generation));
    set_env(plan.value().rank_env, "HVD_ELASTIC_STATE_DIR", state_dir);
    set_env(plan.value().rank_env, "HVD_ELASTIC_DRIVER", *address + ":" + std::to_string(listener.port()));
    set_env(plan.value().rank_env, kElasticRankHostsVariable, g.hosts.value());
    // The token stays off the command line (ps, --verbose): Hydra passes the launcher's
    // environment on; Open MPI takes what -x names from it.
    if (plan->flavor == MpiFlavor::OpenMpi) plan.value().forward_names.push_back("HVD_ELASTIC_TOKEN");
    auto command = build_command(*plan);
    if (!command) {
      std::cerr << "hvdrun: " << command.error() << "\n";
      return finish(kUsageError);
    }
    PreparedJob job{std::move(plan).value(), std::move(command).value(), {{"HVD_ELASTIC_TOKEN", token}}};

    if (g_stop_signal) {
      std::cerr << "hvdrun: elastic: " << strsignal(g_stop_signal) << " before generation " << generation
                << " started; the job ends\n";
      return finish(128 + g_stop_signal);
    }
    std::cerr << "hvdrun: elastic: generation " << generation << " on "
              << plural(static_cast<int64_t>(ranks.size()), "host", "hosts") << " (" << describe_hosts(ranks)
              << "), " << plural(np, "rank", "ranks") << after << "\n";
    const JobReport report = run_prepared_job_report(job, g, np);
    {
      std::lock_guard<std::mutex> lock(shared.mutex);
      shared.running.clear();
    }
    if (!report.started) return finish(report.status);
    const std::string ended = "hvdrun: elastic: generation " + std::to_string(generation);
    if (report.forwarded_signal || g_stop_signal) {
      const int sig = report.forwarded_signal ? report.forwarded_signal : g_stop_signal;
      std::cerr << ended << " was stopped by " << strsignal(sig) << "; the job ends\n";
      return finish(report.forwarded_signal ? report.status : 128 + sig);
    }
    const GenerationVerdict verdict = judge_generation(report, ranks, np);
    if (verdict.end == GenerationEnd::kDone) {
      std::cerr << ended
                << (verdict.done_note.empty() ? std::string(" finished: every rank returned 0")
                                              : " finished: every other rank returned 0, then " + verdict.done_note)
                << "; the job is done\n";
      return finish(0);
    }
    if (verdict.end == GenerationEnd::kLeftForNewHosts) {
      std::cerr << ended << " ended: its ranks left for a change of hosts (status 75)\n";
      after = ", after a change of hosts";
      continue;
    }

    // A failure: its host is left out, and the next generation starts from the last commit.
    std::string out_for;
    {
      std::lock_guard<std::mutex> lock(shared.mutex);
      for (const std::string& h : verdict.blamed) {
        const double seconds = shared.hosts.blacklist(h, monotonic_seconds(), random01());
        char text[96];
        if (seconds < 0)
          std::snprintf(text, sizeof text, "host %s is left out for the rest of the job", h.c_str());
        else
          std::snprintf(text, sizeof text, "host %s is left out for %.1f s", h.c_str(), seconds);
        out_for += std::string("; ") + text;
      }
    }
    ++failures;
    std::cerr << ended << " failed: " << verdict.cause << out_for << "\n";
    if (e.reset_limit && failures > *e.reset_limit) {
      std::cerr << "hvdrun: elastic: the job ends: " << plural(failures, "failure", "failures")
                << ", more than --reset-limit " << *e.reset_limit
                << " restarts allow; raise --reset-limit to restart more often\n";
      return finish(report.status != 0 ? report.status : 1);
    }
    after = verdict.after;
  }
}

}  // namespace hvdrun
