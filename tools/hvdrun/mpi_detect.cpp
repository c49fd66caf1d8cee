#include "mpi_detect.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace hvdrun {
namespace {

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string_view rest(path);
  while (true) {
    size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return true;
    if (colon == std::string_view::npos) return false;
    rest = rest.substr(colon + 1);
  }
}

}  // namespace

const char* flavor_name(MpiFlavor flavor) {
  switch (flavor) {
    case MpiFlavor::Mpich: return "MPICH";
    case MpiFlavor::OpenMpi: return "Open MPI";
    case MpiFlavor::IntelMpi: return "Intel MPI";
  }
  return "unknown";
}

std::optional<MpiFlavor> flavor_from_version_text(std::string_view text) {
  if (text.find("Intel(R) MPI") != std::string_view::npos) return MpiFlavor::IntelMpi;
  if (text.find("Open MPI") != std::string_view::npos ||
      text.find("OpenRTE") != std::string_view::npos ||
      text.find("Open RTE") != std::string_view::npos)
    return MpiFlavor::OpenMpi;
  if (text.find("HYDRA") != std::string_view::npos ||
      text.find("MPICH") != std::string_view::npos)
    return MpiFlavor::Mpich;
  return std::nullopt;
}

std::string choose_launcher(const char* hvdrun_mpiexec_env,
                            std::optional<MpiFlavor> library_flavor) {
  if (hvdrun_mpiexec_env && *hvdrun_mpiexec_env) return hvdrun_mpiexec_env;
  // Debian installs each MPI's launcher under a suffixed name too; the plain name is
  // whichever the `mpirun` alternative points at, not necessarily libhvd's MPI.
  if (library_flavor == MpiFlavor::Mpich && on_path("mpiexec.mpich")) return "mpiexec.mpich";
  if (library_flavor == MpiFlavor::OpenMpi && on_path("mpiexec.openmpi"))
    return "mpiexec.openmpi";
  if (!on_path("mpiexec") && on_path("mpirun")) return "mpirun";
  return "mpiexec";
}

std::optional<std::string> launcher_mismatch(MpiFlavor launcher_flavor,
                                             std::optional<MpiFlavor> library_flavor,
                                             const std::string& launcher) {
  if (!library_flavor || *library_flavor == launcher_flavor) return std::nullopt;
  std::string want = flavor_name(*library_flavor);
  std::string suffixed = *library_flavor == MpiFlavor::OpenMpi ? "mpiexec.openmpi"
                         : *library_flavor == MpiFlavor::Mpich ? "mpiexec.mpich"
                                                               : "mpiexec";
  return launcher + " belongs to " + flavor_name(launcher_flavor) + " but libhvd was built "
         "against " + want + ": every rank would start as a job of its own. Put " + want +
         "'s launcher first on PATH or set HVDRUN_MPIEXEC (e.g. HVDRUN_MPIEXEC=" + suffixed +
         ").";
}

Result<ProbeOutput> run_version_probe(const std::string& program, int timeout_ms) {
  using R = Result<ProbeOutput>;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return R::failure(std::string("cannot create a pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::string arg0 = program, arg1 = "--version";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return R::failure("cannot run '" + program + "': " + std::strerror(rc));
  }

  ProbeOutput out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  char buf[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    // The banner is what matters; a launcher that prints megabytes is not one.
    if (out.text.size() < (1 << 20)) out.text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return R::failure("'" + program + " --version' did not finish within " +
                      std::to_string(timeout_ms / 1000) + " s");
  out.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

Result<MpiFlavor> detect_flavor(const std::string& program) {
  using R = Result<MpiFlavor>;
  auto probe = run_version_probe(program, 30000);
  if (!probe)
    return R::failure(probe.error() +
                      "\nInstall MPICH or Open MPI, or point HVDRUN_MPIEXEC at an MPI launcher.");
  auto flavor = flavor_from_version_text(probe->text);
  if (probe->exit_status == 0 && flavor) return *flavor;
  std::string first_line = probe->text.substr(0, probe->text.find('\n'));
  if (probe->exit_status != 0)
    return R::failure("'" + program + " --version' failed with status " +
                      std::to_string(probe->exit_status) +
                      (first_line.empty() ? std::string() : ": " + first_line) +
                      "\nPoint HVDRUN_MPIEXEC at a working MPI launcher.");
  return R::failure("'" + program + " --version' does not name MPICH, Open MPI or Intel MPI" +
                    (first_line.empty() ? std::string() : " (it says: " + first_line + ")") +
                    "\nPoint HVDRUN_MPIEXEC at the mpiexec of one of them.");
}

}  // namespace hvdrun
