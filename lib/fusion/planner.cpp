#include "fusion/planner.h"

#include <map>
#include <tuple>
#include <unordered_map>

#include "core/dtype.h"

namespace hvd {

namespace {

// Bytes the collective moves into each rank's output (allgather) or reduces
// (allreduce, reducescatter: the whole input).
int64_t response_bytes(const Response& r) {
  const int64_t esize = static_cast<int64_t>(dtype_size(r.spec.dtype));
  if (r.spec.op == OpType::Allgather) {
    int64_t rows = 0;
    for (int64_t x : r.per_rank) rows += x;
    return rows * r.spec.row_elements() * esize;
  }
  return r.spec.num_elements() * esize;
}

bool grouped(const Response& r) { return r.spec.group_size > 1; }

// A group's members are named "<group>.<index>".
std::string_view group_of(const Response& r) {
  std::string_view name = r.name;
  return name.substr(0, name.rfind('.'));
}

// Responses may share a buffer only if they are reduced by the same call with the
// same scaling on the same devices.
using FusionKey = std::tuple<int, int, int, double, double, int32_t, int32_t, std::string>;

FusionKey key_of(const Response& r, const FusionConfig& config) {
  std::string group;
  if (config.disable_group_fusion && grouped(r)) group = group_of(r);
  return {static_cast<int>(r.spec.op), r.spec.dtype, r.spec.reduce_op, r.spec.prescale, r.spec.postscale, r.spec.device,
          r.spec.process_set, group};
}

// The fusable members of each group (grouped allreduce, allgather, reducescatter)
// in this round, so that a group is placed as one unit where its first member
// appears, wherever the others are in the list (cached responses come in cache-slot
// order, not enqueue order).
struct GroupUnit {
  std::vector<size_t> members;
  int64_t bytes = 0;
  bool placed = false;
};

class Groups {
 public:
  Groups(std::span<const Response> responses, const FusionConfig& config) {
    for (size_t i = 0; i < responses.size(); ++i) {
      const Response& r = responses[i];
      if (!grouped(r) || !fusable(r, config)) continue;
      std::string id = std::string(group_of(r)) + '\n' + std::to_string(r.spec.process_set) + '\n' +
                       std::to_string(static_cast<int>(r.spec.op));
      auto [it, fresh] = index_.try_emplace(std::move(id), units_.size());
      if (fresh) units_.emplace_back();
      GroupUnit& unit = units_[it->second];
      unit.members.push_back(i);
      unit.bytes += response_bytes(r);
      unit_of_.emplace(i, it->second);
    }
  }
  bool empty() const { return units_.empty(); }
  // The unit response i belongs to, or nullptr.
  GroupUnit* unit_of(size_t i) {
    auto it = unit_of_.find(i);
    return it == unit_of_.end() ? nullptr : &units_[it->second];
  }

 private:
  std::vector<GroupUnit> units_;
  std::unordered_map<std::string, size_t> index_;
  std::unordered_map<size_t, size_t> unit_of_;
};

}  // namespace

bool fusable(const Response& r, const FusionConfig& config) {
  if (!r.error.ok() || config.threshold <= 0) return false;
  const int64_t bytes = response_bytes(r);
  if (bytes > config.threshold) return false;
  switch (r.spec.op) {
    case OpType::Allgather:
      // One collective instead of several, whatever the sizes.
      return true;
    case OpType::Allreduce:
      // A large tensor is reduced in place, without copies; a group is fused as one
      // unit whatever its members' sizes.
      return bytes < config.inplace_min_bytes || grouped(r);
    case OpType::Reducescatter:
      // Fused on the host path (the device path reduces one tensor at a time).
      return (bytes < config.inplace_min_bytes || grouped(r)) && r.spec.device == HVD_DEVICE_CPU;
    default:
      return false;
  }
}

std::vector<Batch> plan_batches(std::span<const Response> responses, const FusionConfig& config) {
  std::vector<Batch> batches;
  std::map<FusionKey, size_t> open;  // key -> batch still accepting tensors
  // The last fusable tensor's key and the batch it went to (open[last_key]).
  constexpr size_t kNone = static_cast<size_t>(-1);
  FusionKey last_key;
  size_t last_batch = kNone;
  Groups groups(responses, config);

  // Adds `bytes` worth of tensors with `key` to a batch with room for all of them:
  // the previous tensor's, the key's open batch, or a new one.
  auto batch_for = [&](const FusionKey& key, int64_t bytes) -> Batch& {
    // Consecutive tensors usually share a key (one model's gradients): the batch they
    // join is then the one the previous tensor joined, without a map lookup.
    if (last_batch != kNone && last_key == key && batches[last_batch].bytes + bytes <= config.threshold)
      return batches[last_batch];
    last_key = key;
    auto it = open.find(key);
    if (it != open.end() && batches[it->second].bytes + bytes <= config.threshold) {
      last_batch = it->second;
      return batches[last_batch];
    }
    // A new batch; it stays open for later tensors unless the old one has more room
    // left (after a large group, small tensors still fill the old one).
    last_batch = batches.size();
    if (it == open.end())
      open.emplace(key, last_batch);
    else if (batches[it->second].bytes > bytes)
      it->second = last_batch;
    return batches.emplace_back(Batch{{}, true, 0});
  };
  auto add = [&](Batch& b, size_t i, int64_t bytes) {
    b.items.push_back(i);
    b.bytes += bytes;
  };

  for (size_t i = 0; i < responses.size(); ++i) {
    const Response& r = responses[i];
    const int64_t bytes = r.error.ok() ? response_bytes(r) : 0;
    if (!fusable(r, config)) {
      batches.push_back(Batch{{i}, false, bytes});
      continue;
    }
    const FusionKey key = key_of(r, config);
    GroupUnit* unit = groups.empty() ? nullptr : groups.unit_of(i);
    if (!unit) {
      add(batch_for(key, bytes), i, bytes);
      continue;
    }
    if (unit->placed) continue;
    unit->placed = true;
    if (unit->bytes <= config.threshold) {
      Batch& b = batch_for(key, unit->bytes);
      for (size_t m : unit->members) add(b, m, response_bytes(responses[m]));
      continue;
    }
    // A group above the threshold: consecutive pieces that each fill a buffer.
    for (size_t m : unit->members) {
      const int64_t member_bytes = response_bytes(responses[m]);
      add(batch_for(key, member_bytes), m, member_bytes);
    }
  }
  return batches;
}

}  // namespace hvd
