#include "fusion/planner.h"

#include <map>
#include <tuple>

#include "core/dtype.h"

namespace hvd {

namespace {

// Bytes the collective moves into each rank's output.
int64_t response_bytes(const Response& r) {
  const int64_t esize = static_cast<int64_t>(dtype_size(r.spec.dtype));
  if (r.spec.op == OpType::Allgather) {
    int64_t rows = 0;
    for (int64_t x : r.per_rank) rows += x;
    return rows * r.spec.row_elements() * esize;
  }
  return r.spec.num_elements() * esize;
}

// Responses may share a buffer only if they are reduced by the same call with the
// same scaling on the same devices.
using FusionKey = std::tuple<int, int, int, double, double, int32_t, int32_t, std::string>;

FusionKey key_of(const Response& r, const FusionConfig& config) {
  std::string group;
  if (config.disable_group_fusion && r.spec.group_size > 0)
    group = r.name.substr(0, r.name.rfind('.'));
  return {static_cast<int>(r.spec.op), r.spec.dtype, r.spec.reduce_op, r.spec.prescale, r.spec.postscale, r.spec.device,
          r.spec.process_set, group};
}

}  // namespace

bool fusable(const Response& r, const FusionConfig& config) {
  if (!r.error.ok() || config.threshold <= 0) return false;
  int64_t bytes = response_bytes(r);
  // Allgathers are fused whatever their size (one collective instead of several);
  // a large allreduce goes without copies.
  if (r.spec.op == OpType::Allgather) return bytes <= config.threshold;
  if (r.spec.op != OpType::Allreduce) return false;
  return bytes < config.inplace_min_bytes && bytes <= config.threshold;
}

std::vector<Batch> plan_batches(std::span<const Response> responses, const FusionConfig& config) {
  std::vector<Batch> batches;
  std::map<FusionKey, size_t> open;  // key -> batch still accepting tensors
  // The last fusable tensor's key and the batch it went to (open[last_key]).
  constexpr size_t kNone = static_cast<size_t>(-1);
  FusionKey last_key;
  size_t last_batch = kNone;
  for (size_t i = 0; i < responses.size(); ++i) {
    const Response& r = responses[i];
    int64_t bytes = r.error.ok() ? response_bytes(r) : 0;
    if (!fusable(r, config)) {
      batches.push_back(Batch{{i}, false, bytes});
      continue;
    }
    FusionKey key = key_of(r, config);
    // Consecutive tensors usually share a key (one model's gradients): the batch they
    // join is then the one the previous tensor joined, without a map lookup.
    if (last_batch != kNone && last_key == key &&
        batches[last_batch].bytes + bytes <= config.threshold) {
      Batch& b = batches[last_batch];
      b.items.push_back(i);
      b.bytes += bytes;
      continue;
    }
    last_key = key;
    auto it = open.find(key);
    if (it != open.end() && batches[it->second].bytes + bytes <= config.threshold) {
      Batch& b = batches[it->second];
      b.items.push_back(i);
      b.bytes += bytes;
      last_batch = it->second;
      continue;
    }
    open[key] = last_batch = batches.size();
    batches.push_back(Batch{{i}, true, bytes});
  }
  return batches;
}

}  // namespace hvd
