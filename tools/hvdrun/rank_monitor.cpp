#include "rank_monitor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

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

// Where markers go: stderr (the launcher carries it back), or, with an events
// folder (--output-filename, where stderr goes to the rank's file), a file there of
// their own, written whole under another name first so that hvdrun never reads half.
std::string host_name() {
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  return host;
}

// libhvd's first line on the notice pipe, written as hvd_init begins (before MPI's
// initialization); the exit line follows it.
constexpr std::string_view kInitNotice = "init\n";

bool began_init(const std::string& notice_text) {
  return notice_text.compare(0, kInitNotice.size(), kInitNotice) == 0;
}

void emit(const std::string& line, const char* events_dir) {
  if (!events_dir) {
    ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());  // one write: one line
    (void)written;
    return;
  }
  static int serial = 0;
  const std::string name = std::string(events_dir) + "/" + host_name() + "." +
                           std::to_string(::getpid()) + "." + std::to_string(serial++);
  const std::string partial = name + ".part";
  int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (written == static_cast<ssize_t>(line.size())) ::rename(partial.c_str(), name.c_str());
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

  // libhvd writes "init" to the notice pipe as hvd_init begins, before MPI_Init: from
  // then on that rank waits in MPI's initialization for every other, so hvdrun must
  // know it to end a job one of whose ranks exited before starting (rank_exit.h). The
  // exit notice follows on the same pipe. Only the pipe's readiness is watched here,
  // with the child's end (pidfd): no polling.
  int status = 0;
  std::string notice_text;
  bool started = false;
  const int pidfd = notice[0] >= 0 ? static_cast<int>(::syscall(SYS_pidfd_open, child, 0)) : -1;
  auto read_notice = [&] {
    char buf[256];
    ssize_t n;
    while ((n = ::read(notice[0], buf, sizeof buf)) > 0) notice_text.append(buf, static_cast<size_t>(n));
    return n == 0;  // end of file: the child closed it (or exited)
  };
  while (pidfd >= 0 && !started) {
    pollfd fds[2] = {{pidfd, POLLIN, 0}, {notice[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents) {
      const bool closed = read_notice();
      if (began_init(notice_text)) {
        started = true;
        emit(std::string(kRankMpiMarker) + "rank=" + std::to_string(launcher_rank()) +
                 " pid=" + std::to_string(child) + " host=" + host_name() + "\n",
             events_dir);
      }
      if (closed && !started) break;
    }
    if (fds[0].revents) break;  // it exited
  }
  if (pidfd >= 0) ::close(pidfd);
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  RankExit e;
  e.rank = launcher_rank();
  e.pid = child;
  e.time = wall_seconds();
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
  e.mpi = began_init(notice_text) ? RankMpi::Hvd : pidfd >= 0 ? RankMpi::None : RankMpi::Unknown;
  e.host = host_name();
  // Every exit: a clean one before MPI ends the job when other ranks wait in MPI_Init.
  emit(format_rank_exit(e), events_dir);
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
