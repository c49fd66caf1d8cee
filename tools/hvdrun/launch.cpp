#include "launch.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <time.h>
#include <termios.h>
#include <unistd.h>

namespace hvdrun {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// The job's process group, read by the signal handler; 0 while there is none.
volatile sig_atomic_t g_job_pgid = 0;
// The last signal passed on to the job; 0 if none.
volatile sig_atomic_t g_forwarded_signal = 0;

void forward_signal(int sig) {
  int saved = errno;
  g_forwarded_signal = sig;
  if (g_job_pgid > 0) ::kill(-static_cast<pid_t>(g_job_pgid), sig);
  errno = saved;
}

// The job runs in its own process group so that a signal reaches mpiexec and
// everything it started. When hvdrun owns the terminal, the job's group is made
// the foreground group, or mpiexec (which reads stdin for rank 0) would be stopped
// by SIGTTIN; Ctrl-C then reaches the job directly.
class TerminalHandover {
 public:
  void give_to(pid_t pgid) {
    if (!::isatty(STDIN_FILENO) || ::tcgetpgrp(STDIN_FILENO) != ::getpgrp()) return;
    if (set_foreground(pgid)) owned_ = true;
  }
  ~TerminalHandover() {
    if (owned_) set_foreground(::getpgrp());
  }

 private:
  static bool set_foreground(pid_t pgid) {
    // A background group changing the foreground gets SIGTTOU unless it is blocked.
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTTOU);
    ::sigprocmask(SIG_BLOCK, &block, &old);
    bool ok = ::tcsetpgrp(STDIN_FILENO, pgid) == 0;
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    return ok;
  }
  bool owned_ = false;
};

double monotonic_seconds() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // hvdrun's stderr is gone: the job still runs to its end
    done += static_cast<size_t>(n);
  }
}

// How long the launcher has to end a failed job by itself before hvdrun's SIGTERM;
// how long the job may take to end after that, before SIGKILL; and how long output
// may still arrive after the launcher exited (a process that kept the pipe open must
// not hold hvdrun).
constexpr double kLauncherEndsJobSeconds = 3;
constexpr double kTerminateGraceSeconds = 5;
constexpr double kDrainSeconds = 2;
// How long the job may take to end after a signal hvdrun passed on, before SIGKILL: a
// launcher that ignores it, or hangs in its own shutdown (once in the test suite's
// runs, Open MPI 4.1's mpirun after SIGINT, SIGTERM or SIGHUP to the group), must not
// leave the user's Ctrl-C without effect and the ranks holding their devices.
constexpr double kSignalGraceSeconds = 10;
// How long a rank's monitor may say nothing (it says it is alive every
// kRankAliveSeconds) while other ranks have exited, before hvdrun takes its node for
// one that no longer reaches the launcher: a node cut off from the launcher's network
// after the work was done. Its ranks' MPI_Finalize gives up (HVD_FINALIZE_TIMEOUT_SECONDS)
// and they exit, but the launcher never hears of it and waits for ever (Hydra's
// mpiexec for that node's proxy).
constexpr double kSilentNodeSeconds = 4 * kRankAliveSeconds;

// SIGKILL to the job's process group once it has outlived a forwarded signal by
// kSignalGraceSeconds. signalled_at: when the signal was first seen here (-1 before).
void kill_job_deaf_to_signal(pid_t pid, double* signalled_at, bool* killed) {
  const int sig = g_forwarded_signal;
  if (sig == 0 || *killed) return;
  const double now = monotonic_seconds();
  if (*signalled_at < 0) *signalled_at = now;
  if (now - *signalled_at <= kSignalGraceSeconds) return;
  char text[160];
  std::snprintf(text, sizeof text,
                "hvdrun: the job did not end within %.0f s of %s passed on to it; killing it\n",
                kSignalGraceSeconds, strsignal(sig));
  write_all(STDERR_FILENO, text);
  ::kill(-pid, SIGKILL);
  *killed = true;
}

// The markers the rank monitors left as files (--output-filename); at --verbose, what
// was there and is not theirs.
void read_event_files(EventFolder& events, bool verbose, JobWatch* watch) {
  std::vector<std::string> ignored;
  for (const std::string& line : events.take_markers(&ignored)) watch->take_marker(line);
  if (verbose)
    for (const std::string& note : ignored) write_all(STDERR_FILENO, "hvdrun: " + note + "\n");
}

// "1,3,4" (at most 16 listed).
template <typename Ranks>
std::string rank_words(const Ranks& ranks) {
  std::string out;
  size_t n = 0;
  for (int r : ranks) {
    if (n++ == 16) return out + ",...";
    out += (out.empty() ? "" : ",") + std::to_string(r);
  }
  return out;
}

// Waits for the launcher while relaying its stderr (err_fd), ending the job when a
// rank monitor reports the first failure. Returns the launcher's wait status.
int relay_and_wait(pid_t pid, int err_fd, EventFolder* events, bool verbose, int64_t expected_ranks,
                   JobOutcome* outcome, bool* ended_by_hvdrun, int64_t num_proc) {
  StderrRelay relay;
  relay.watch().now_seconds = monotonic_seconds;
  // Hydra's proxies, watched for the one whose end the launcher reacts to.
  LauncherChildren children(pid);
  double scanned_at = -1;
  bool open = true, exited = false;
  int status = 0;
  double failed_at = -1, terminated_at = -1, exited_at = -1, signalled_at = -1, all_gone_at = -1;
  bool killed = false;
  char buf[65536];
  while (open || !exited) {
    if (!exited) {
      pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        exited = true;
        exited_at = monotonic_seconds();
      }
    }
    if (exited && monotonic_seconds() - exited_at > kDrainSeconds) break;
    // The launcher's new children, at most every 100 ms: proxies start with the job.
    if (!exited && monotonic_seconds() - scanned_at > 0.1) {
      children.scan();
      scanned_at = monotonic_seconds();
    }
    std::vector<pollfd> fds;
    if (open) fds.push_back({err_fd, POLLIN, 0});
    for (int fd : children.fds()) fds.push_back({fd, POLLIN, 0});
    // Output is done: wait for the launcher itself, still ending it if asked.
    int ready = ::poll(fds.data(), static_cast<nfds_t>(fds.size()), 100);
    children.check();
    if (open && ready > 0 && fds[0].revents) {
      ssize_t n = ::read(err_fd, buf, sizeof buf);
      if (n > 0) {
        const std::string text = relay.feed(std::string_view(buf, static_cast<size_t>(n)));
        outcome->loss_lines.feed(text);
        write_all(STDERR_FILENO, text);
      } else if (n == 0 || errno != EINTR) {
        open = false;
      }
    }
    if (events) read_event_files(*events, verbose, &relay.watch());
    // Ranks that die of a signal the user sent through hvdrun are not failures to
    // report; the job is already ending.
    if (relay.take_new_failure() && g_forwarded_signal == 0) failed_at = monotonic_seconds();
    // The launcher ends the job itself when a rank fails (Hydra and mpirun kill the
    // others), and terminating mpirun while it does has crashed it (Open MPI 4.1:
    // SIGSEGV in its abort, the job's status lost). hvdrun steps in at once only for
    // a rank that exited cleanly leaving peers waiting in initialization, which no
    // launcher counts as a failure; otherwise after the launcher's grace.
    if (failed_at >= 0 && terminated_at < 0 && !exited && g_forwarded_signal == 0 &&
        (relay.first_failure()->left_peers_waiting ||
         monotonic_seconds() - failed_at > kLauncherEndsJobSeconds)) {
      write_all(STDERR_FILENO, "hvdrun: ending the job: " +
                                   describe_rank_exit(*relay.first_failure()) + "\n");
      ::kill(-pid, SIGTERM);
      terminated_at = monotonic_seconds();
    }
    // Every rank has ended and the launcher runs on: nothing is left for it to do.
    if (expected_ranks > 0 && all_gone_at < 0 &&
        static_cast<int64_t>(relay.watch().exited().size()) >= expected_ranks)
      all_gone_at = monotonic_seconds();
    if (all_gone_at >= 0 && terminated_at < 0 && !exited &&
        monotonic_seconds() - all_gone_at > kRanksGoneSeconds) {
      write_all(STDERR_FILENO, "hvdrun: every rank ended but the launcher did not within " +
                                   std::to_string(static_cast<int>(kRanksGoneSeconds)) +
                                   " s; ending it\n");
      ::kill(-pid, SIGTERM);
      terminated_at = monotonic_seconds();
    }
    if (failed_at < 0 && terminated_at < 0 && !exited && g_forwarded_signal == 0 && num_proc > 0) {
      const std::vector<int> silent =
          relay.watch().silent_since(monotonic_seconds() - kSilentNodeSeconds, num_proc);
      if (!silent.empty()) {
        write_all(STDERR_FILENO, "hvdrun: ending the job: rank(s) " + rank_words(silent) +
                                     " sent no word for " + std::to_string(static_cast<int>(kSilentNodeSeconds)) +
                                     " s while rank(s) " + rank_words(relay.watch().exited()) +
                                     " had exited: their node no longer reaches the launcher, which "
                                     "would wait for it for ever\n");
        ::kill(-pid, SIGTERM);
        children.signal_running(SIGTERM);
        terminated_at = monotonic_seconds();
        outcome->silent_ranks = silent;
      }
    }
    if (terminated_at >= 0 && !exited && !killed &&
        monotonic_seconds() - terminated_at > kTerminateGraceSeconds) {
      ::kill(-pid, SIGKILL);
      killed = true;
    }
    if (!exited) kill_job_deaf_to_signal(pid, &signalled_at, &killed);
  }
  // A node hvdrun stopped waiting for: what the launcher started for it here may have
  // outlived the launcher (Open MPI's starters keep groups of their own).
  if (!outcome->silent_ranks.empty()) children.signal_running(SIGKILL);
  const std::string rest = relay.finish();
  outcome->loss_lines.feed(rest + "\n");
  write_all(STDERR_FILENO, rest);
  if (!exited)
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  outcome->first_failure = relay.first_failure();
  outcome->failures = relay.watch().failures();
  outcome->proxies_ended_first = children.ended_first();
  outcome->job_family = children.job_family();
  outcome->ranks_reported = relay.watch().exited();
  *ended_by_hvdrun = terminated_at >= 0;
  return status;
}

}  // namespace

JobOutcome run_job(const LaunchCommand& command, bool watch_ranks, EventFolder* events,
                   bool verbose, int64_t num_proc, int64_t expected_ranks) {
  JobOutcome outcome;
  if (command.argv.empty()) {
    outcome.error = "empty command";
    return outcome;
  }
  std::vector<char*> argv;
  for (const auto& a : command.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // The child reports a failed exec through this pipe; a successful exec closes it.
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    outcome.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return outcome;
  }
  // The job's stderr, relayed by hvdrun to find the rank monitors' markers.
  int err_pipe[2] = {-1, -1};
  if (watch_ranks && ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    outcome.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    ::close(report[0]);
    ::close(report[1]);
    return outcome;
  }

  // Hold the forwarded signals until the job's group is known.
  sigset_t forwarded, old_mask;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  ::sigprocmask(SIG_BLOCK, &forwarded, &old_mask);
  // A signal ignored when hvdrun started (nohup, or SIGINT for a background job of
  // a non-interactive shell) stays ignored, for hvdrun and for the job, as a shell
  // would have it.
  struct sigaction old_actions[4];
  struct sigaction action {};
  action.sa_handler = forward_signal;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART: the blocking calls below (read, waitpid) loop on EINTR anyway, and
  // a runtime that runs handlers only between calls (ThreadSanitizer defers them to
  // the end of the intercepted call) would otherwise never forward the signal while
  // waitpid restarted itself in the kernel: the job would run on.
  action.sa_flags = 0;
  for (size_t i = 0; i < 4; ++i) {
    ::sigaction(kForwarded[i], nullptr, &old_actions[i]);
    if (old_actions[i].sa_handler != SIG_IGN) ::sigaction(kForwarded[i], &action, nullptr);
  }

  pid_t pid = ::fork();
  if (pid < 0) {
    outcome.error = std::string("cannot fork: ") + std::strerror(errno);
    for (size_t i = 0; i < 4; ++i) ::sigaction(kForwarded[i], &old_actions[i], nullptr);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    ::close(report[0]);
    ::close(report[1]);
    if (watch_ranks) {
      ::close(err_pipe[0]);
      ::close(err_pipe[1]);
    }
    return outcome;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    if (watch_ranks) ::dup2(err_pipe[1], STDERR_FILENO);  // dup2 clears close-on-exec
    for (size_t i = 0; i < 4; ++i) ::sigaction(kForwarded[i], &old_actions[i], nullptr);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    for (const auto& [name, value] : command.launcher_env) ::setenv(name.c_str(), value.c_str(), 1);
    ::execvp(argv[0], argv.data());
    int err = errno;
    ssize_t ignored = ::write(report[1], &err, sizeof err);
    (void)ignored;
    ::_exit(127);
  }

  // Both sides set the group, so it exists whichever runs first.
  ::setpgid(pid, pid);
  g_forwarded_signal = 0;
  g_job_pgid = pid;
  TerminalHandover terminal;
  terminal.give_to(pid);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  ::close(report[1]);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(report[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);

  int status = 0;
  bool ended_by_hvdrun = false;
  if (watch_ranks) {
    ::close(err_pipe[1]);
    status = relay_and_wait(pid, err_pipe[0], events, verbose, expected_ranks, &outcome,
                            &ended_by_hvdrun, num_proc);
    ::close(err_pipe[0]);
  } else {
    // Polled, not blocked in waitpid: a job that outlives a forwarded signal is ended.
    double signalled_at = -1;
    bool killed = false;
    while (true) {
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) break;
      kill_job_deaf_to_signal(pid, &signalled_at, &killed);
      ::poll(nullptr, 0, 100);
    }
  }
  g_job_pgid = 0;
  outcome.forwarded_signal = g_forwarded_signal;
  if (WIFSIGNALED(status) && g_forwarded_signal == 0 && !ended_by_hvdrun) {
    // Its ranks on this node are in its process group and would run on without it,
    // holding their devices: a rank waiting in a collective never returns.
    outcome.launcher_crash_signal = WTERMSIG(status);
    ::kill(-pid, SIGKILL);
  }
  for (size_t i = 0; i < 4; ++i) ::sigaction(kForwarded[i], &old_actions[i], nullptr);

  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    outcome.error = "cannot run '" + command.argv[0] + "': " + std::strerror(exec_errno);
    outcome.exit_status = 127;
    return outcome;
  }
  outcome.started = true;
  outcome.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // A job the user stopped ends as a shell reports a program killed by that signal
  // (SIGINT 130, SIGTERM 143, SIGHUP 129), whatever the launcher made of it: Hydra
  // exits 0 or 2 (hvdrun's usage-error status), Open MPI 1.
  if (g_forwarded_signal != 0) outcome.exit_status = 128 + g_forwarded_signal;
  return outcome;
}

}  // namespace hvdrun
