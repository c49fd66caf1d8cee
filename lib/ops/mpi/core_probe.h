// The distance between the cores of a node's first two ranks: the round trip of a
// cache line that one rank writes and the other answers, in memory the node's ranks
// share. Cores that share a last-level cache answer in tens of nanoseconds; cores that
// do not (other sockets, other core complexes, or a virtual machine's virtual CPUs
// that the host has put there) in hundreds, and there the data of a 1 MiB MPI call,
// fresh in the other rank's cache, comes across slower than a 16 MiB call's streams
// from memory (docs/performance.md, 2026-11-29 entry).
//
// No collective at teardown: the line is unmapped by each process alone, so a rank
// that dies cannot hold the others in a shutdown.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>

namespace hvd {

class CoreProbe {
 public:
  CoreProbe() = default;
  ~CoreProbe();
  CoreProbe(const CoreProbe&) = delete;
  CoreProbe& operator=(const CoreProbe&) = delete;

  // Collective over `local` (the node's ranks, local rank 0 first): maps one shared
  // cache line between them. Where it cannot (no shared memory), the probe stays
  // closed on every rank of the node and probe() returns nothing.
  void open(MPI_Comm local);
  bool is_open() const { return line_ != nullptr; }

  // Called by local ranks 0 and 1 at an agreed moment (the same index on both, never
  // repeated): a cache line's round trip in nanoseconds, on local rank 0; nothing on
  // other ranks, or when the other rank did not answer within half a millisecond (it
  // was descheduled: nothing is learned then). After 16 untimed round trips, 64 are
  // timed in batches of 8; the fastest batch counts.
  std::optional<double> probe(uint32_t index);

 private:
  std::optional<double> ping(uint32_t index);
  void echo(uint32_t index);

  uint64_t* line_ = nullptr;  // the first word of a shared page
  int local_rank_ = -1;
};

}  // namespace hvd
