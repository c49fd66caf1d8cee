// hvd-bench: measures libhvd against raw MPI on the same buffers, in the same run.
// See docs/performance.md for the modes, the references and the JSON keys.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include <hvd/hvd.h>

#include "comm.h"
#include "idle_mode.h"
#include "options.h"
#include "sweep_mode.h"
#include "workload_mode.h"

using namespace hvdbench;

int main(int argc, char** argv) {
  Options options;
  if (auto code = parse_options(argc, argv, &options)) return *code;

  // The conveniences only set the environment libhvd reads at hvd_init.
  if (options.fusion_threshold)
    setenv("HOROVOD_FUSION_THRESHOLD", options.fusion_threshold->c_str(), 1);
  if (options.cycle_time) setenv("HOROVOD_CYCLE_TIME", options.cycle_time->c_str(), 1);

  // The references call MPI from this thread while libhvd's background thread
  // drives its own communicators.
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "hvd-bench: MPI_Init_thread failed\n");
    return 1;
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    if (world_rank() == 0)
      std::fprintf(stderr, "hvd-bench: the MPI library does not provide MPI_THREAD_MULTIPLE, "
                           "which hvd-bench needs to call MPI beside libhvd\n");
    MPI_Finalize();
    return 1;
  }
  if (hvd_init() != HVD_SUCCESS) abort_job(std::string("hvd_init failed: ") + hvd_last_error());

  int code = 0;
  switch (options.mode) {
    case Mode::Idle: code = run_idle_mode(options); break;
    case Mode::Workload:
    case Mode::Tensors: code = run_workload_mode(options); break;
    case Mode::Sweep: code = run_sweep_mode(options); break;
  }

  hvd_shutdown();
  MPI_Finalize();
  return code;
}
