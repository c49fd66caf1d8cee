// The core probe's protocol (ops/mpi/core_probe.h) on its own, under mpiexec: a round
// trip measured when local ranks 0 and 1 both take part; neither waits longer than its
// patience (0.5 ms) when the other does not come, so a descheduled rank cannot stall
// the background thread (the bound checked, 1 s, only a hang would cross); a probe
// after such a failure works again; other ranks return at once. A measurement is
// required only where the node's ranks have a CPU each: with more ranks than CPUs, the
// third rank's busy MPI polling can keep one of the two off its CPU for longer than
// the probe's patience (libhvd does not probe there).
// Usage: mpiexec -n 2|3 test_core_probe
#include <mpi.h>
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "ops/mpi/core_probe.h"

namespace {

[[noreturn]] void fail(const char* what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "rank %d: %s\n", rank, what);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

double seconds_of(const auto& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int rank = 0, size = 1;
  MPI_Comm_rank(local, &rank);
  MPI_Comm_size(local, &size);
  if (size < 2) fail("needs two ranks on one node");
  hvd::CoreProbe probe;
  probe.open(local);
  if (!probe.is_open()) fail("the probe's shared line could not be mapped");
  uint32_t index = 1;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) fail("sched_getaffinity failed");
  MPI_Allreduce(MPI_IN_PLACE, &cpus, static_cast<int>(sizeof cpus), MPI_BYTE, MPI_BOR, local);
  const bool cpu_each = size <= CPU_COUNT(&cpus);

  // Both take part: a round trip on rank 0 (a few tries: a descheduled rank fails one).
  auto both = [&](const char* what) {
    bool measured = false;
    for (int attempt = 0; attempt < 200 && !measured; ++attempt) {
      MPI_Barrier(local);
      const std::optional<double> ns = probe.probe(index++);
      int ok = rank == 0 ? (ns && *ns > 0) : 1;
      if (rank != 0 && ns) fail("a round trip reported on a rank other than local rank 0");
      MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, local);
      measured = ok;
      if (measured && rank == 0) std::printf("%s: %.0f ns\n", what, *ns);
    }
    if (!measured && cpu_each) fail("no round trip measured in 200 probes with both ranks taking part");
    if (!measured && rank == 0) std::printf("%s: none measured (more ranks than CPUs)\n", what);
  };
  both("first probe");

  // Rank 1 does not come: rank 0 gives up within its patience, with nothing measured.
  MPI_Barrier(local);
  if (rank == 0) {
    std::optional<double> ns;
    const double s = seconds_of([&] { ns = probe.probe(index); });
    if (ns) fail("a round trip measured without the other rank");
    if (s > 1.0) fail("rank 0 waited more than 1 s for an absent rank");
  }
  ++index;
  // Rank 0 does not come: rank 1 leaves within its patience.
  MPI_Barrier(local);
  if (rank == 1) {
    const double s = seconds_of([&] { probe.probe(index); });
    if (s > 1.0) fail("rank 1 waited more than 1 s for an absent rank 0");
  }
  ++index;
  // Index 0 is refused (it would match the zeroed line); other ranks return at once.
  if (probe.probe(0)) fail("probe(0) measured something");
  if (rank >= 2 && probe.probe(index)) fail("a rank other than 0 and 1 measured something");

  both("after the failures");
  MPI_Comm_free(&local);
  MPI_Finalize();
  if (rank == 0) std::printf("core probe: ok\n");
  return 0;
}
