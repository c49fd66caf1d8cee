// What one timed step can be: libhvd, or one of the raw-MPI references of
// BENCHMARKS.md, all reducing the same elements in place with sum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor_set.h"

namespace hvdbench {

enum class Strategy {
  Libhvd,         // hvd_allreduce_async per tensor in reverse order, then wait all
  PerTensor,      // one blocking MPI_Allreduce per tensor, same order
  Packed,         // one MPI_Allreduce over the tensors packed back to back
  PackedChunks,   // that packed buffer in consecutive chunks of chunk_bytes
  // Not a limit but the floor of any library that fuses on one thread: copy every
  // tensor into the packed buffer, reduce it, copy the results back. What libhvd
  // adds beyond it is negotiation, threads and hand-offs.
  FusedCopies,
  // Not a limit either: libhvd's default plan done by the calling thread, with no
  // negotiation or threads. Tensors of 256 KiB and more are reduced in place in 1 MiB
  // chunks, smaller ones copied into the packed buffer, reduced in one call and copied
  // back. What raw MPI reaches without copying large tensors that sit in separate
  // buffers, as a framework's gradients do.
  Hybrid,
};

struct StrategyCase {
  Strategy strategy;
  int64_t chunk_bytes = 0;  // PackedChunks only
  // "libhvd", "per-tensor", "packed", "packed-chunks-4MiB", "fused-copies", "hybrid"
  std::string name() const;
  bool uses_packed() const { return strategy == Strategy::Packed || strategy == Strategy::PackedChunks; }
  // Candidates for the limit: raw MPI over data already in place.
  bool is_limit_candidate() const {
    return strategy != Strategy::Libhvd && strategy != Strategy::FusedCopies &&
           strategy != Strategy::Hybrid;
  }
};

// libhvd first, then (with references) per-tensor, packed, the chunk sizes 1, 4
// and 16 MiB that are smaller than the packed buffer (a larger chunk would repeat
// the single call), fused-copies and hybrid.
std::vector<StrategyCase> step_cases(bool with_references, int64_t total_bytes);

// Runs one step of a reference on the set's buffers.
void run_reference(const StrategyCase& c, TensorSet& set);

// libhvd's step. Names stay the same from step to step, as a training loop's do,
// so libhvd's response cache sees its steady state. The step's tensors go to libhvd
// in one of three ways: a call per tensor; one hvd_grouped_allreduce_async (as a
// framework hands over a bucket of gradients), which shows what the per-tensor calls
// themselves cost; or, on a contiguous set, a call per bucket of consecutive tensors
// up to bucket_bytes of the flat buffer, as DistributedOptimizer with bucket views and
// DDP hand them over.
class LibhvdStep {
 public:
  LibhvdStep(const TensorSet& set, bool grouped, int64_t bucket_bytes);
  void run(TensorSet& set);
  // "in a call per tensor", "in one grouped call a step", "in a call per bucket of
  // up to 25 MiB (4 calls)": for the table's header line.
  std::string handover() const;

 private:
  void run_grouped(TensorSet& set);
  void run_buckets(TensorSet& set);

  // Consecutive tensors in submission order (descending indices), the first of them
  // tensor `first`: the flat buffer holds them back to back from its start.
  struct Bucket {
    size_t first;
    int64_t elements;
  };

  bool grouped_;
  int64_t bucket_bytes_;
  std::vector<Bucket> buckets_;
  std::vector<std::string> names_;  // one per tensor, or one per bucket
  std::vector<long long> handles_;
  std::vector<const void*> sends_;
  std::vector<void*> recvs_;
  std::vector<int64_t> counts_;
};

}  // namespace hvdbench
