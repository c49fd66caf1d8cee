#include "rank_monitor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "elastic_hosts.h"
#include "event_files.h"
#include "line_relay.h"
#include "rank_exit.h"

namespace hvdrun {
namespace {

constexpr int kPassedOn[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

volatile sig_atomic_t g_child = 0;

void pass_on(int sig) {
  const int saved = errno;
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
  errno = saved;
}

// The rank as the launcher numbers it: MPICH and Intel MPI (PMI), Open MPI, PMIx.
int launcher_rank() {
  for (const char* name : {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
    const char* v = std::getenv(name);
    if (v && *v) return std::atoi(v);
  }
  return -1;
}

std::string host_name() {
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  return host;
}

// An elastic job's rank learns its host's name as the discovery script gave it
// (HOROVOD_HOSTNAME): hvdrun names the generation's hosts in placement order, and the
// launcher numbers ranks host by host.
void set_elastic_host_name(int rank) {
  const char* hosts = std::getenv(kElasticRankHostsVariable);
  if (!hosts) return;
  auto list = parse_host_list(hosts);
  ::unsetenv(kElasticRankHostsVariable);
  if (!list || rank < 0) return;
  if (auto host = host_of_rank(*list, rank)) ::setenv("HOROVOD_HOSTNAME", host->c_str(), 1);
}

// libhvd's first line on the notice pipe, written as hvd_init begins (before MPI's
// initialization); the exit line follows it.
constexpr std::string_view kInitNotice = "init\n";

bool began_init(const std::string& notice_text) {
  return notice_text.compare(0, kInitNotice.size(), kInitNotice) == 0;
}

// The job's token for marker files (event_files.h), taken from the environment before
// the rank starts, so that the rank's own environment does not carry it.
std::string g_events_token;

// Where markers go: stderr (the launcher carries it back), or, with an events folder
// (--output-filename, where stderr goes to the rank's file), a file there of their own.
// err_relay: the rank's stderr relay, if any: a marker starts a line of its own.
void emit(const std::string& line, const char* events_dir, LineRelay* err_relay) {
  if (!events_dir) {
    if (err_relay) err_relay->end_line();
    ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());  // one write: one line
    (void)written;
    return;
  }
  static int serial = 0;
  write_event_file(events_dir, g_events_token,
                   host_name() + "." + std::to_string(::getpid()) + "." + std::to_string(serial++),
                   line);
}

double wall_seconds() {
  timeval tv;
  ::gettimeofday(&tv, nullptr);
  return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6;
}

}  // namespace

int run_rank_monitor(int argc, char** argv, const char* events_dir) {
  if (argc < 1) {
    std::fprintf(stderr, "hvdrun %s: no command to run\n", kRankMonitorFlag);
    return 2;
  }
  const pid_t monitor = ::getpid();
  set_elastic_host_name(launcher_rank());
  if (const char* token = std::getenv(kEventsTokenVariable)) g_events_token = token;
  ::unsetenv(kEventsTokenVariable);
  // libhvd writes the time its process began to exit here (HVD_EXIT_NOTICE_FD): a
  // rank's exit takes a while (shutdown, MPI_Finalize), and peers that fail because
  // of it may be seen to exit before it does.
  int notice[2] = {-1, -1};
  if (::pipe(notice) == 0) {
    ::fcntl(notice[0], F_SETFD, FD_CLOEXEC);
    ::fcntl(notice[0], F_SETFL, O_NONBLOCK);
    ::setenv("HVD_EXIT_NOTICE_FD", std::to_string(notice[1]).c_str(), 1);
  }
  struct sigaction action {};
  action.sa_handler = pass_on;
  sigemptyset(&action.sa_mask);
  sigset_t held, old;
  sigemptyset(&held);
  for (int sig : kPassedOn) sigaddset(&held, sig);
  ::sigprocmask(SIG_BLOCK, &held, &old);

  // The rank's stdout and stderr come through the monitor a line at a time
  // (line_relay.h); where a relay cannot be made, the rank writes to the launcher.
  LineRelay out_relay, err_relay;
  int rank_out = -1, rank_err = -1;
  const bool relay_out = out_relay.open_for(STDOUT_FILENO, &rank_out);
  const bool relay_err = err_relay.open_for(STDERR_FILENO, &rank_err);

  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "hvdrun: rank %d: cannot fork: %s\n", launcher_rank(), std::strerror(errno));
    return 127;
  }
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != monitor) ::_exit(137);  // the monitor died before the prctl
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    if (relay_out) ::dup2(rank_out, STDOUT_FILENO);  // dup2 clears close-on-exec
    if (relay_err) ::dup2(rank_err, STDERR_FILENO);
    ::execvp(argv[0], argv);
    std::fprintf(stderr, "hvdrun: rank %d: cannot run '%s': %s\n", launcher_rank(), argv[0],
                 std::strerror(errno));
    ::_exit(127);
  }
  g_child = child;
  if (notice[1] >= 0) ::close(notice[1]);
  if (relay_out) ::close(rank_out);
  if (relay_err) ::close(rank_err);
  // A launcher gone mid-job: the relay's write fails (EPIPE) instead of killing the
  // monitor, and the relay closes its end, so that the rank's next write fails as it
  // would have without the monitor.
  std::signal(SIGPIPE, SIG_IGN);
  for (int sig : kPassedOn) {
    struct sigaction previous;
    ::sigaction(sig, nullptr, &previous);
    if (previous.sa_handler != SIG_IGN) ::sigaction(sig, &action, nullptr);
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);

  // libhvd writes "init" to the notice pipe as hvd_init begins, before MPI_Init: from
  // then on that rank waits in MPI's initialization for every other, so hvdrun must
  // know it to end a job one of whose ranks exited before starting (rank_exit.h). The
  // exit notice follows on the same pipe. Only readiness is watched here: the notice
  // pipe, the rank's output and the child's end (pidfd). Without a pidfd the monitor
  // checks for the child's end every kExitCheckMs while it relays output.
  constexpr int kExitCheckMs = 50;
  int status = 0;
  std::string notice_text;
  bool started = false;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
  const bool knows_init = notice[0] >= 0 && pidfd >= 0;
  bool watch_notice = knows_init;
  auto read_notice = [&] {
    char buf[256];
    ssize_t n;
    while ((n = ::read(notice[0], buf, sizeof buf)) > 0) notice_text.append(buf, static_cast<size_t>(n));
    return n == 0;  // end of file: the child closed it (or exited)
  };
  LineRelay* relays[2] = {relay_out ? &out_relay : nullptr, relay_err ? &err_relay : nullptr};
  LineRelay* marker_relay = relay_err ? &err_relay : nullptr;
  auto relaying = [&] {
    return std::any_of(std::begin(relays), std::end(relays), [](LineRelay* r) { return r && r->fd() >= 0; });
  };
  // Every kRankAliveSeconds a rank-alive marker on stderr (rank_exit.h), so hvdrun
  // tells a node that no longer reaches it from one whose ranks still run. It waits for
  // the end of the rank's line, but not longer than another interval: a progress bar
  // that never ends its line gets a line break then.
  using Clock = LineRelay::Clock;
  const auto alive_every = std::chrono::milliseconds(static_cast<int64_t>(kRankAliveSeconds * 1000));
  const bool sends_alive = !events_dir && marker_relay;
  auto alive_due = Clock::now();
  auto send_alive = [&](Clock::time_point now) {
    if (!sends_alive || now < alive_due) return;
    if (!marker_relay->at_line_start() && now < alive_due + alive_every) return;
    emit(std::string(kRankAliveMarker) + "rank=" + std::to_string(launcher_rank()) + "\n", nullptr,
         marker_relay);
    alive_due = now + alive_every;
  };
  // One wait for any of them; false when the child's end was seen (or cannot be).
  bool reaped = false;
  auto wait_once = [&](bool watch_child, int limit_ms) {
    pollfd fds[4];
    int n = 0, at_child = -1, at_notice = -1, at_relay[2] = {-1, -1};
    if (watch_child && pidfd >= 0) fds[at_child = n++] = {pidfd, POLLIN, 0};
    if (watch_notice && !started) fds[at_notice = n++] = {notice[0], POLLIN, 0};
    int timeout = limit_ms;
    const auto now = LineRelay::Clock::now();
    for (int i = 0; i < 2; ++i) {
      if (!relays[i] || relays[i]->fd() < 0) continue;
      fds[at_relay[i] = n++] = {relays[i]->fd(), POLLIN, 0};
      const int due = relays[i]->ms_until_due(now);
      if (due >= 0 && (timeout < 0 || due < timeout)) timeout = due;
    }
    if (watch_child && pidfd < 0 && (timeout < 0 || timeout > kExitCheckMs)) timeout = kExitCheckMs;
    if (watch_child && sends_alive) {
      // Past due (the rank is mid-line): look again in a tenth of the interval.
      const auto wait = alive_due > now ? alive_due - now : alive_every / 10;
      const int alive_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count());
      if (timeout < 0 || alive_ms < timeout) timeout = alive_ms;
    }
    if (::poll(fds, static_cast<nfds_t>(n), timeout) < 0 && errno != EINTR) return false;
    if (at_notice >= 0 && fds[at_notice].revents) {
      const bool closed = read_notice();
      if (began_init(notice_text)) {
        started = true;
        emit(std::string(kRankMpiMarker) + "rank=" + std::to_string(launcher_rank()) +
                 " pid=" + std::to_string(child) + " host=" + host_name() + "\n",
             events_dir, marker_relay);
      }
      if (closed && !started) watch_notice = false;
    }
    for (int i = 0; i < 2; ++i)
      if (at_relay[i] >= 0 && fds[at_relay[i]].revents) relays[i]->pump();
    for (LineRelay* r : relays)
      if (r) r->flush_due(LineRelay::Clock::now());
    if (watch_child) send_alive(Clock::now());
    if (!watch_child) return true;
    if (at_child >= 0) return !fds[at_child].revents;
    const pid_t ended = ::waitpid(child, &status, WNOHANG);
    reaped = ended == child;
    return ended == 0;
  };
  if (pidfd >= 0 || relaying()) {
    while (wait_once(true, -1)) {
    }
  }
  const double exit_seen = wall_seconds();
  // What the rank (or a process it left behind that shares its output) still writes,
  // for a second at most: a daemon holding the output open must not hold the rank.
  const auto drain_end = LineRelay::Clock::now() + std::chrono::seconds(1);
  for (auto now = LineRelay::Clock::now(); relaying() && now < drain_end; now = LineRelay::Clock::now())
    wait_once(false, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(drain_end - now).count()));
  // The exit marker below ends stderr's last line (emit); with an events folder
  // nothing follows it.
  out_relay.flush();
  if (events_dir) err_relay.flush();
  if (pidfd >= 0) ::close(pidfd);
  while (!reaped && ::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  RankExit e;
  e.rank = launcher_rank();
  e.pid = child;
  e.time = exit_seen;
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  else e.exit_code = WEXITSTATUS(status);
  if (notice[0] >= 0) {
    read_notice();
    ::close(notice[0]);
    // "init" (hvd_init began), then the exit line: the time the process began to exit
    // and the status it gave exit(). A rank that called exit() with a failure status is
    // that failure, from the moment it called it, even if it was killed while
    // finishing its exit.
    const std::string exit_line =
        began_init(notice_text) ? notice_text.substr(kInitNotice.size()) : notice_text;
    double began = 0;
    int status_given = 0;
    if (std::sscanf(exit_line.c_str(), "%lf %d", &began, &status_given) == 2 &&
        status_given != 0 && began > 0 && began <= e.time) {
      e.time = began;
      e.signal = 0;
      e.exit_code = status_given & 0xff;
    }
  }
  // Whether the rank began hvd_init: a rank that exits cleanly without it, while
  // another waits in initialization, left that one waiting for ever.
  e.mpi = began_init(notice_text) ? RankMpi::Hvd : knows_init ? RankMpi::None : RankMpi::Unknown;
  e.host = host_name();
  // Every exit: a clean one before MPI ends the job when other ranks wait in MPI_Init.
  emit(format_rank_exit(e), events_dir, marker_relay);
  if (e.signal) {
    // End the same way, so the launcher sees what the rank did.
    std::signal(e.signal, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, e.signal);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::raise(e.signal);
    return 128 + e.signal;
  }
  return e.exit_code;
}

}  // namespace hvdrun
