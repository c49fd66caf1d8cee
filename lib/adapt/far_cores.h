// Large allreduces in calls sized for where the ranks' cores sit (HVD_FAR_CORES).
// Between cores that share a cache, MPI's 1 MiB calls (MPICH's default chunk) are the
// fastest: each call's data is still in the shared cache when the other rank reads it.
// Between cores that share none, that data comes across slower than a 16 MiB call's
// streams from memory: on this project's virtual machines, whose host moves the two
// virtual CPUs between the two placements every few minutes, a 100 MB buffer reduced in
// 1 MiB calls took 33 ms there against 19 ms in 16 MiB calls, and 13.5 ms against
// 16.5 ms where a cache was shared (docs/performance.md, 2026-11-29 entry).
//
// Local ranks 0 and 1 of each node time a cache line's round trip between them at
// negotiation rounds 1, 2, 4, ... and then every kProbeEveryRounds rounds
// (ops/mpi/core_probe.h). Each rank says in every round's flags whether it saw its
// node's cores near (RoundFlags::near_cores, ANDed), so every rank switches the chunk
// size at the same round, and every rank of a call cuts the same MPI calls.
#pragma once

#include <cstdint>

#include <mpi.h>

#include "ops/backend.h"
#include "ops/mpi/core_probe.h"
#include "params/params.h"

namespace hvd {

// The chunk size between far cores (the largest plain MPI program's chunk that was
// never slower there).
inline constexpr int64_t kFarCoresChunkBytes = 16 << 20;
inline constexpr uint64_t kProbeEveryRounds = 64;
// Above this round trip the cores share no cache. Measured on this project's virtual
// machines, whose host puts their two CPUs in one of three placements: 53-80 ns near,
// 118-263 ns in the middle one, 328-367 ns far apart; the 16 MiB calls win only far
// apart (by 30-45%), and cost 3-15% in the middle one (docs/performance.md,
// 2026-11-29 entries). Other sockets are farther still.
inline constexpr double kFarRoundTripNs = 280;

// What the policy reads of the job: values settled at init, equal where they must be
// (the runtime fills it; runtime/runtime.h).
struct FarCoresJob {
  MPI_Comm world = MPI_COMM_NULL;  // rank 0's word on a chunk size the user set
  MPI_Comm local = MPI_COMM_NULL;  // the node's ranks: the probe's shared memory
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;
  bool every_rank_has_a_cpu = true;                  // as agreed at init
  int64_t chunk_bytes = 0;                           // HVD_ALLREDUCE_CHUNK_BYTES, as agreed
  Params::AutoChoice setting = Params::AutoChoice::Auto;  // HVD_FAR_CORES
};

class FarCores {
 public:
  // Collective over job.world (on the thread that runs hvd_init): decides, alike on
  // every rank, whether the nodes probe, and maps the probe's line where they do.
  // counters: where the placement in use and the measured round trip are shown.
  FarCores(const FarCoresJob& job, TrafficCounters* counters);

  // This rank's word for the round's flags: false if it measured its node's cores far
  // (local rank 0) or HVD_FAR_CORES=always.
  bool near_here() const { return !always_ && !measured_far_; }
  // After a round's flags are known, on every rank: the chunk size for the agreed
  // placement, and the probe if this round is one (local ranks 0 and 1 only).
  int64_t chunk_bytes(bool near_cores);
  void after_round(uint64_t round);

 private:
  const int rank_;
  const int local_rank_;
  const int64_t configured_;  // the chunk size between near cores
  TrafficCounters* counters_;
  CoreProbe probe_;
  bool probing_ = false;
  bool always_ = false;
  bool measured_far_ = false;
  bool measured_once_ = false;
  bool far_in_use_ = false;
};

}  // namespace hvd
