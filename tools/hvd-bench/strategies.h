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
};

struct StrategyCase {
  Strategy strategy;
  int64_t chunk_bytes = 0;  // PackedChunks only
  std::string name() const;  // "libhvd", "per-tensor", "packed", "packed-chunks-4MiB"
  bool uses_packed() const { return strategy == Strategy::Packed || strategy == Strategy::PackedChunks; }
};

// libhvd first, then (with references) per-tensor, packed, and the chunk sizes 1, 4
// and 16 MiB that are smaller than the packed buffer (a larger chunk would repeat
// the single call).
std::vector<StrategyCase> step_cases(bool with_references, int64_t total_bytes);

// Runs one step of a reference on the set's buffers.
void run_reference(const StrategyCase& c, TensorSet& set);

// libhvd's step. Names stay the same from step to step, as a training loop's do,
// so libhvd's response cache sees its steady state.
class LibhvdStep {
 public:
  explicit LibhvdStep(size_t tensors);
  void run(TensorSet& set);

 private:
  std::vector<std::string> names_;
  std::vector<long long> handles_;
};

}  // namespace hvdbench
