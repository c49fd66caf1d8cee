#include "check_build.h"

#include <hvd/hvd.h>

namespace hvdrun {
namespace {

std::string mark(int built) { return built ? "    [X] " : "    [ ] "; }

}  // namespace

std::string check_build_report() {
  // MPICH's text holds a tab ("MPICH Version:\t4.0.2"); one line reads better.
  std::string mpi_version;
  for (const char* c = hvd_mpi_library_version(); *c; ++c) {
    bool blank = *c == ' ' || *c == '\t';
    if (!(blank && (mpi_version.empty() || mpi_version.back() == ' ')))
      mpi_version += blank ? ' ' : *c;
  }
  std::string r = "libhvd v" + std::string(hvd_version_string()) + ":\n\n";
  r += "Available Controllers:\n";
  r += mark(hvd_mpi_built()) + "MPI" + (mpi_version.empty() ? "" : " (" + mpi_version + ")") +
       "\n    [ ] Gloo\n\n";
  r += "Available Tensor Operations:\n";
  r += mark(hvd_nccl_built()) + "NCCL\n";
  r += mark(hvd_mpi_built()) + "MPI\n";
  r += "    [ ] Gloo\n\n";
  r += "Available Features:\n";
  r += mark(hvd_cuda_built()) + "CUDA (device-memory tensors)\n";
  r += mark(hvd_hwloc_built()) + "hwloc (GPU pinning and CPU binding)\n";
  return r;
}

std::string version_report() {
  return "hvdrun " HVDRUN_VERSION " (libhvd " + std::string(hvd_version_string()) + ")\n";
}

}  // namespace hvdrun
