#include "adapt/far_cores.h"

#include <algorithm>

#include "base/log.h"

namespace hvd {

FarCores::FarCores(const FarCoresJob& job, TrafficCounters* counters)
    : rank_(job.rank), local_rank_(job.local_rank), configured_(job.chunk_bytes),
      counters_(counters) {
  always_ = job.setting == Params::AutoChoice::Always;
  // A chunk size the user set is kept; rank 0's word counts, as for the size itself
  // (params are rank 0's: runtime/init_agreement.h).
  int explicit_chunk = param_is_set("HVD_ALLREDUCE_CHUNK_BYTES") ? 1 : 0;
  MPI_Bcast(&explicit_chunk, 1, MPI_INT, 0, job.world);
  // Ranks that share CPUs answer each other only when the scheduler lets them (the
  // probe would wait out its patience every time), and their calls pay for the
  // sharing more than for the distance.
  probing_ = job.setting == Params::AutoChoice::Auto && !explicit_chunk &&
             configured_ < kFarCoresChunkBytes && job.local_size >= 2 &&
             job.every_rank_has_a_cpu;
  // Alike on every rank of a node: probing_ depends on agreed values only.
  if (probing_) {
    probe_.open(job.local);
    if (!probe_.is_open()) {
      probing_ = false;
      if (job.local_rank == 0)
        HVD_LOG(Debug, "HVD_FAR_CORES: no shared memory for the probe on this node; calls "
                       "keep HVD_ALLREDUCE_CHUNK_BYTES");
    }
  }
}

int64_t FarCores::chunk_bytes(bool near_cores) {
  const bool far = !near_cores;
  if (far != far_in_use_) {
    far_in_use_ = far;
    counters_->far_cores.store(far ? 1 : 0, std::memory_order_relaxed);
    if (rank_ == 0 && !always_)
      HVD_LOG(Info, "large allreduces now go in %lld KiB calls: %s",
              static_cast<long long>((far ? kFarCoresChunkBytes : configured_) >> 10),
              far ? "a node's ranks sit on cores that share no cache"
                  : "every node's ranks sit on cores that share a cache");
  }
  return far ? std::max(configured_, kFarCoresChunkBytes) : configured_;
}

void FarCores::after_round(uint64_t round) {
  // Rounds 1, 2, 4, ... 64, then every 64th: a job decides within its first steps.
  const bool probe_round = round % kProbeEveryRounds == 0 || (round & (round - 1)) == 0;
  if (!probing_ || local_rank_ > 1 || round == 0 || !probe_round) return;
  const std::optional<double> ns = probe_.probe(static_cast<uint32_t>(round));
  if (!ns) return;
  counters_->core_round_trip_ns.store(static_cast<uint64_t>(std::max(1.0, *ns)),
                                      std::memory_order_relaxed);
  const bool far = *ns > kFarRoundTripNs;
  if (far != measured_far_ || !measured_once_)
    HVD_LOG(Debug, "a cache line's round trip between local ranks 0 and 1: %.0f ns (cores %s)",
            *ns, far ? "far apart" : "near");
  measured_far_ = far;
  measured_once_ = true;
}

}  // namespace hvd
