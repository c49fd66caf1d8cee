#include "execute/fusion_planner.h"

#include <map>
#include <tuple>
#include <unordered_map>

#include "base/dtype.h"

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
      if (!grouped(r) || !fusable(r, config)) continue;  // rare: not on the per-tensor path
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

namespace {

// A host allreduce in a set that fuse_large names: its large tensors fuse too, and its
// batches are reduced in pieces of one size.
bool fuses_large(const Response& r, const FusionConfig& config) {
  return r.spec.op == OpType::Allreduce && r.spec.device == HVD_DEVICE_CPU &&
         r.spec.reduce_op != HVD_OP_ADASUM && config.fuse_large && config.fuse_large(r.spec.process_set);
}

bool keeps_pieces_equal(const Response& r, const FusionConfig& config) {
  return config.equal_pieces && config.equal_pieces(r.spec.process_set);
}

// fusable() for a response of `bytes` (response_bytes, computed once per tensor).
bool fusable_sized(const Response& r, int64_t bytes, const FusionConfig& config) {
  if (!r.error.ok() || config.threshold <= 0 || bytes > config.threshold) return false;
  switch (r.spec.op) {
    case OpType::Allgather:
      // One collective instead of several, whatever the sizes.
      return true;
    case OpType::Allreduce:
      // A large tensor is reduced in place, without copies, alone or in a batch where
      // the set asks for it (host memory; Adasum takes whole tensors); a group is fused
      // as one unit whatever its members' sizes.
      return bytes < config.inplace_min_bytes || grouped(r) || fuses_large(r, config);
    case OpType::Reducescatter:
      return bytes < config.inplace_min_bytes || grouped(r);
    default:
      return false;
  }
}

// key_of(a) == key_of(b), without building the keys.
bool same_key(const Response& a, const Response& b, const FusionConfig& config) {
  const TensorSpec& x = a.spec;
  const TensorSpec& y = b.spec;
  if (x.op != y.op || x.dtype != y.dtype || x.reduce_op != y.reduce_op || x.prescale != y.prescale ||
      x.postscale != y.postscale || x.device != y.device || x.process_set != y.process_set)
    return false;
  if (!config.disable_group_fusion || (!grouped(a) && !grouped(b))) return true;
  return grouped(a) && grouped(b) && group_of(a) == group_of(b);
}

}  // namespace

bool fusable(const Response& r, const FusionConfig& config) {
  return fusable_sized(r, r.error.ok() ? response_bytes(r) : 0, config);
}

std::vector<Batch> plan_batches(std::span<const Response> responses, const FusionConfig& config) {
  std::vector<Batch> batches;
  std::map<FusionKey, size_t> open;  // key -> batch still accepting tensors
  // The last fusable tensor and the batch it went to (open[key_of(*last)]).
  constexpr size_t kNone = static_cast<size_t>(-1);
  const Response* last = nullptr;
  size_t last_batch = kNone;
  Groups groups(responses, config);

  // A batch with room for `bytes` more of r's kind: the previous tensor's, the key's
  // open batch, or a new one.
  auto batch_for = [&](const Response& r, int64_t bytes) -> Batch& {
    // Consecutive tensors usually share a key (one model's gradients): the batch they
    // join is then the one the previous tensor joined, without building a key.
    if (last && same_key(*last, r, config) && batches[last_batch].bytes + bytes <= config.threshold)
      return batches[last_batch];
    last = &r;
    FusionKey key = key_of(r, config);
    auto it = open.find(key);
    if (it != open.end() && batches[it->second].bytes + bytes <= config.threshold) {
      last_batch = it->second;
      return batches[last_batch];
    }
    // A new batch; it stays open for later tensors unless the old one has more room
    // left (after a large group, small tensors still fill the old one).
    last_batch = batches.size();
    if (it == open.end())
      open.emplace(std::move(key), last_batch);
    else if (batches[it->second].bytes > bytes)
      it->second = last_batch;
    const bool large = fuses_large(r, config);
    return batches.emplace_back(Batch{{}, true, 0, large, large && keeps_pieces_equal(r, config)});
  };
  auto add = [&](Batch& b, size_t i, int64_t bytes) {
    b.items.push_back(i);
    b.bytes += bytes;
  };

  for (size_t i = 0; i < responses.size(); ++i) {
    const Response& r = responses[i];
    const int64_t bytes = r.error.ok() ? response_bytes(r) : 0;
    if (!fusable_sized(r, bytes, config)) {
      // Alone (above the threshold, or fusion off), still in pieces of one size where
      // the set's batches are.
      const bool large = r.error.ok() && fuses_large(r, config);
      batches.push_back(Batch{{i}, false, bytes, large, large && keeps_pieces_equal(r, config)});
      continue;
    }
    GroupUnit* unit = groups.empty() ? nullptr : groups.unit_of(i);
    if (!unit) {
      add(batch_for(r, bytes), i, bytes);
      continue;
    }
    if (unit->placed) continue;
    unit->placed = true;
    if (unit->bytes <= config.threshold) {
      Batch& b = batch_for(r, unit->bytes);
      for (size_t m : unit->members) add(b, m, response_bytes(responses[m]));
      continue;
    }
    // A group above the threshold: consecutive pieces that each fill a buffer.
    for (size_t m : unit->members) {
      const int64_t member_bytes = response_bytes(responses[m]);
      add(batch_for(responses[m], member_bytes), m, member_bytes);
    }
  }
  return batches;
}

bool PlanMemo::matches(std::span<const Response> responses, const FusionConfig& config) const {
  if (!valid_ || responses.size() != versions_.size() || config.threshold != threshold_ ||
      config.inplace_min_bytes != inplace_min_bytes_ ||
      config.disable_group_fusion != disable_group_fusion_)
    return false;
  for (size_t i = 0; i < responses.size(); ++i)
    if (responses[i].version != versions_[i]) return false;
  return true;
}

const std::vector<Batch>& PlanMemo::plan(std::span<const Response> responses,
                                         const FusionConfig& config) {
  if (matches(responses, config)) return batches_;
  batches_ = plan_batches(responses, config);
  // Remembered only when every response is a cached one without an error: a fresh
  // response (version 0) has no name for its content.
  valid_ = true;
  versions_.clear();
  for (const Response& r : responses) {
    if (r.version == 0 || !r.error.ok()) {
      valid_ = false;
      break;
    }
    versions_.push_back(r.version);
  }
  threshold_ = config.threshold;
  inplace_min_bytes_ = config.inplace_min_bytes;
  disable_group_fusion_ = config.disable_group_fusion;
  return batches_;
}

}  // namespace hvd
