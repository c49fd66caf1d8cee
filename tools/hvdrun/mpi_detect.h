// Which MPI launcher hvdrun drives, and which implementation it belongs to.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "result.h"

namespace hvdrun {

enum class MpiFlavor { Mpich, OpenMpi, IntelMpi };

const char* flavor_name(MpiFlavor flavor);

// The implementation named by the output of `mpiexec --version`, if known.
// Intel MPI's launcher is Hydra too, so its banner is checked first.
std::optional<MpiFlavor> flavor_from_version_text(std::string_view text);

// HVDRUN_MPIEXEC if set and not empty; otherwise the launcher of the MPI libhvd was
// built against under its suffixed Debian name (mpiexec.mpich, mpiexec.openmpi) when
// on PATH; otherwise mpiexec, or mpirun when only that is on PATH. The result is what
// execvp is given.
std::string choose_launcher(const char* hvdrun_mpiexec_env,
                            std::optional<MpiFlavor> library_flavor = std::nullopt);

// Why a launcher of one MPI cannot start ranks of a libhvd built against another (each
// rank would run as a one-rank job), and what to do; nullopt when they agree or the
// library's MPI is unknown.
std::optional<std::string> launcher_mismatch(MpiFlavor launcher_flavor,
                                             std::optional<MpiFlavor> library_flavor,
                                             const std::string& launcher);

struct ProbeOutput {
  int exit_status = -1;  // 128+N if killed by signal N
  std::string text;      // stdout and stderr together
};

// Runs `program --version` without a shell and collects its output, killing it
// after timeout_ms. Fails if the program cannot be started.
Result<ProbeOutput> run_version_probe(const std::string& program, int timeout_ms);

// Runs the probe and names the flavor; the error says what to do.
Result<MpiFlavor> detect_flavor(const std::string& program);

}  // namespace hvdrun
