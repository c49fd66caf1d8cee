/*
 * Preloaded into the ranks of a network-lab job (scripts/netlab.sh): MPI_Finalize
 * that cannot hang in MPICH 4.0's UCX teardown over TCP.
 *
 * MPICH 4.0 (ch4:ucx) disconnects every UCX endpoint in MPI_Finalize and only then
 * waits in a PMI barrier, where it makes no more progress. A TCP disconnect needs the
 * peer's progress: a rank whose disconnects completed while a slower peer was still
 * progressing (inside its last collective) sits in the PMI barrier while that peer
 * waits for it in its own disconnect, for ever. Measured on the lab: 2 of 6 jobs of 4
 * ranks hang; jobs of 2 ranks never do.
 *
 * Every rank here first leaves a barrier and then makes no MPI progress for a pause
 * much longer than the barrier's exit skew, so no rank answers a disconnect before it
 * has posted its own; then all complete together.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <time.h>

/* 1 s: 200 ms held on a quiet machine (12 of 12 jobs) but not always beside other
 * work on two cores, where a rank can leave the barrier that much later. */
static const struct timespec kPause = {1, 0};

int MPI_Finalize(void) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    PMPI_Barrier(MPI_COMM_WORLD);
    nanosleep(&kPause, NULL);
  }
  return PMPI_Finalize();
}
