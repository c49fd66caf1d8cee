// Large allreduces among ranks that share CPUs: fewer, larger MPI calls.
//
// Every MPI call of a collective waits until each peer has run its part of it. Where
// a machine's ranks outnumber the CPUs they may run on, that is a turn of the
// scheduler per call, whatever the call's size, and the 1 MiB calls and fusion pieces
// that suit ranks with CPUs of their own multiply those turns. Measured
// (docs/performance.md, 2026-11-29 18:00 entry): resnet50's gradients on 4 ranks and
// 2 CPUs took 2.4 s a step in 1 MiB calls and pieces, 0.91 s in 16 MiB ones, over
// shared memory; 5.3-5.5 s against 2.7 s on the network lab's 2 nodes x 2 ranks at
// 1 Gbit/s (raising only one of the two sizes: 5.4 and 6.4 s).
#pragma once

#include <cstdint>

#include <mpi.h>

#include "params/params.h"

namespace hvd {

inline constexpr int64_t kSharedCpusCallBytes = 16 << 20;

// Where ranks share CPUs (every_rank_has_a_cpu false, as agreed at init), raises
// params->allreduce_chunk_bytes and params->fusion_piece_bytes to kSharedCpusCallBytes,
// each unless rank 0's environment set it (HVD_ALLREDUCE_CHUNK_BYTES,
// HVD_FUSION_PIECE_BYTES). Collective over world where they share; call it on the
// thread that runs hvd_init, before the background loop reads the sizes. rank: this
// rank in world (rank 0 says what changed).
void size_calls_for_shared_cpus(bool every_rank_has_a_cpu, MPI_Comm world, int rank,
                                Params* params);

}  // namespace hvd
