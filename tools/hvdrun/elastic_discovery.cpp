#include "elastic_discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hvdrun {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

double monotonic_seconds() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// The most a script may print: far beyond any cluster's host list.
constexpr size_t kMaxOutputBytes = 1 << 20;

}  // namespace

Result<HostList> parse_discovery_output(std::string_view text, int64_t default_slots) {
  using R = Result<HostList>;
  HostList hosts;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    const std::string where = "line " + std::to_string(line_no) + " '" + std::string(line) + "'";
    std::string_view name = line;
    int64_t slots = default_slots;
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      name = trim(line.substr(0, colon));
      std::string_view digits = trim(line.substr(colon + 1));
      slots = 0;
      for (char c : digits) {
        if (c < '0' || c > '9' || slots > kMaxSlotsPerHost) {
          slots = -1;
          break;
        }
        slots = slots * 10 + (c - '0');
      }
      if (digits.empty() || slots < 1 || slots > kMaxSlotsPerHost)
        return R::failure(where + ": the slots after ':' must be a whole number from 1 to " +
                          std::to_string(kMaxSlotsPerHost) + " (print 'host' or 'host:slots')");
    }
    if (std::string problem = host_name_problem(name); !problem.empty())
      return R::failure(where + ": " + problem);
    bool known = false;
    for (HostSlots& h : hosts)
      if (h.host == name) {
        h.slots = slots;
        known = true;
      }
    if (!known) {
      if (hosts.size() >= kMaxHosts)
        return R::failure("more than " + std::to_string(kMaxHosts) + " hosts");
      hosts.push_back({std::string(name), slots});
    }
  }
  return hosts;
}

Result<HostList> run_discovery_script(const std::string& script, int64_t default_slots,
                                      double timeout_s) {
  using R = Result<HostList>;
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0)
    return R::failure(std::string("cannot create a pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    return R::failure(std::string("cannot fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // A group of its own, so that a script that hangs is killed with what it started.
    ::setpgid(0, 0);
    ::dup2(out[1], STDOUT_FILENO);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(out[1]);
  std::string text;
  bool timed_out = false;
  const double deadline = monotonic_seconds() + timeout_s;
  char buf[8192];
  for (;;) {
    const double left = deadline - monotonic_seconds();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (text.size() < kMaxOutputBytes) text.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  if (timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  // The output is closed: the script is ending. One that closed its stdout and runs on
  // is given what is left of the time.
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (!timed_out && monotonic_seconds() > deadline) {
      timed_out = true;
      ::kill(-pid, SIGKILL);
    }
    ::poll(nullptr, 0, 10);
  }
  if (timed_out)
    return R::failure("did not finish within " + std::to_string(static_cast<int>(timeout_s)) +
                      " s; it was killed");
  if (WIFSIGNALED(status))
    return R::failure(std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) +
                      " (" + strsignal(WTERMSIG(status)) + ")");
  if (WEXITSTATUS(status) == 127 && text.empty())
    return R::failure("exited with status 127: the shell could not run it (is it on PATH, or "
                      "given with its path, and executable?)");
  if (WEXITSTATUS(status) != 0)
    return R::failure("exited with status " + std::to_string(WEXITSTATUS(status)));
  auto hosts = parse_discovery_output(text, default_slots);
  if (!hosts) return R::failure("printed a bad line: " + hosts.error());
  return hosts;
}

}  // namespace hvdrun
