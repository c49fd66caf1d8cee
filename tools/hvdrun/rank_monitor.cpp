#include "rank_monitor.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

double wall_seconds() {
  timeval tv;
  ::gettimeofday(&tv, nullptr);
  return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6;
}

}  // namespace

int run_rank_monitor(int argc, char** argv) {
  if (argc < 1) {
    std::fprintf(stderr, "hvdrun %s: no command to run\n", kRankMonitorFlag);
    return 2;
  }
  const pid_t monitor = ::getpid();
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

  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "hvdrun: rank %d: cannot fork: %s\n", launcher_rank(), std::strerror(errno));
    return 127;
  }
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != monitor) ::_exit(137);  // the monitor died before the prctl
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    ::execvp(argv[0], argv);
    std::fprintf(stderr, "hvdrun: rank %d: cannot run '%s': %s\n", launcher_rank(), argv[0],
                 std::strerror(errno));
    ::_exit(127);
  }
  g_child = child;
  if (notice[1] >= 0) ::close(notice[1]);
  for (int sig : kPassedOn) {
    struct sigaction previous;
    ::sigaction(sig, nullptr, &previous);
    if (previous.sa_handler != SIG_IGN) ::sigaction(sig, &action, nullptr);
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);

  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  RankExit e;
  e.rank = launcher_rank();
  e.pid = child;
  e.time = wall_seconds();
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  else e.exit_code = WEXITSTATUS(status);
  if (notice[0] >= 0) {
    char buf[64] = "";
    ssize_t n = ::read(notice[0], buf, sizeof buf - 1);
    double began = 0;
    int status_given = 0;
    // A rank that called exit() with a failure status is that failure, from the
    // moment it called it, even if it was killed while finishing its exit.
    if (n > 0) {
      buf[n] = '\0';
      if (std::sscanf(buf, "%lf %d", &began, &status_given) == 2 && status_given != 0 &&
          began > 0 && began <= e.time) {
        e.time = began;
        e.signal = 0;
        e.exit_code = status_given & 0xff;
      }
    }
    ::close(notice[0]);
  }
  char host[256] = "";
  if (::gethostname(host, sizeof host - 1) == 0) e.host = host;
  if (e.failed()) {
    const std::string line = format_rank_exit(e);
    ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());  // one write: one line
    (void)written;
  }
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
