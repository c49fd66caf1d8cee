#include "adapt/shared_cpus.h"

#include <algorithm>

#include "base/log.h"

namespace hvd {

void size_calls_for_shared_cpus(bool every_rank_has_a_cpu, MPI_Comm world, int rank,
                                Params* params) {
  if (every_rank_has_a_cpu) return;  // agreed: every rank returns here, or none
  // Sizes the user set are kept; rank 0's word counts, as for the sizes themselves
  // (params are rank 0's: runtime/init_agreement.h).
  int set[2] = {param_is_set("HVD_ALLREDUCE_CHUNK_BYTES") ? 1 : 0,
                param_is_set("HVD_FUSION_PIECE_BYTES") ? 1 : 0};
  MPI_Bcast(set, 2, MPI_INT, 0, world);
  Params& p = *params;
  const int64_t chunk = p.allreduce_chunk_bytes, piece = p.fusion_piece_bytes;
  if (!set[0]) p.allreduce_chunk_bytes = std::max(chunk, kSharedCpusCallBytes);
  if (!set[1]) p.fusion_piece_bytes = std::max(piece, kSharedCpusCallBytes);
  if (rank == 0 && (p.allreduce_chunk_bytes != chunk || p.fusion_piece_bytes != piece))
    HVD_LOG(Info,
            "ranks share CPUs: large allreduces go in %lld KiB calls and fusion pieces of "
            "%lld KiB (each MPI call costs the ranks a turn of the scheduler)",
            static_cast<long long>(p.allreduce_chunk_bytes >> 10),
            static_cast<long long>(p.fusion_piece_bytes >> 10));
}

}  // namespace hvd
