#include "negotiate/announcements.h"

#include <algorithm>
#include <climits>
#include <string_view>
#include <unordered_set>

#include "base/log.h"
#include "negotiate/agreement.h"
#include "queue/tensor_queue.h"

namespace hvd {

AnnouncementTable::AnnouncementTable(int world_size, ProcessSetTable* sets)
    : world_size_(world_size), sets_(sets), joined_(static_cast<size_t>(world_size), 0) {}

void AnnouncementTable::apply(int rank, WireEntry&& e, double now, std::vector<Completed>* done) {
  std::string key = TensorQueue::key_of(e.spec.process_set, e.name);
  if (e.kind == WireKind::Timeout) {
    auto it = table_.find(key);
    if (it == table_.end()) return;  // completed meanwhile
    Response response;
    response.key = key;
    response.name = e.name;
    response.spec = e.spec;
    response.error = Error{HVD_ERR_TIMEOUT, e.text};
    response.refused_here = refused_locally(it->second);
    erase_announcement(it);
    done->push_back({std::move(response), false});
    return;
  }
  if (e.spec.op == OpType::Join) {
    record_join(rank, key, e.name, done);
    return;
  }
  auto set = sets_->find(e.spec.process_set);
  if (!set || rank >= static_cast<int>(set->set_rank_of.size()) || set->set_rank_of[rank] < 0) {
    HVD_LOG(Warning, "rank %d announced '%s' on process set %d it is not in; ignored", rank,
            e.name.c_str(), e.spec.process_set);
    return;
  }
  int set_rank = set->set_rank_of[rank];
  auto [it, fresh] = table_.try_emplace(key);
  Announcement& a = it->second;
  if (fresh) {
    a.name = e.name;
    a.process_set = e.spec.process_set;
    a.specs.resize(set->size());
    a.have.assign(set->size(), 0);
    a.first_seen = now - e.waited;
    table_order_.push_back(key);
  }
  if (a.have[set_rank]) {
    // The rank's call after the one it refused: it waits for this one to complete.
    if (!a.refused.empty() && a.refused[set_rank]) a.deferred.emplace_back(rank, std::move(e));
    return;
  }
  // A stall is as old as the longest wait of any rank that announced the tensor.
  a.first_seen = std::min(a.first_seen, now - e.waited);
  a.have[set_rank] = 1;
  if (e.kind == WireKind::Refused) {
    if (a.refused.empty()) a.refused.assign(set->size(), 0);
    a.refused[set_rank] = 1;
    if (a.refusals++ == 0 || rank < a.refusing_rank) {
      a.refusing_rank = rank;
      a.refusal = std::move(e.text);
    }
  }
  if (timeline_ && timeline_->enabled()) {
    const std::string row = timeline_row(e.spec, e.name);
    if (fresh) timeline_->negotiate_start(row, op_type_label(e.spec.op));
    timeline_->negotiate_rank_ready(row, rank);
  }
  a.specs[set_rank] = std::move(e.spec);
  ++a.count;
  if (try_complete(key, a, *set, done)) erase_announcement(it);
}

void AnnouncementTable::replay_deferred(double now, std::vector<Completed>* done) {
  while (!replay_.empty()) {
    std::vector<std::pair<int, WireEntry>> entries = std::move(replay_);
    replay_.clear();
    for (auto& [rank, e] : entries) apply(rank, std::move(e), now, done);
  }
}

void AnnouncementTable::end_of_messages(double now, std::vector<Completed>* done) {
  fail_group_members(done);
  replay_deferred(now, done);
  if (table_order_.size() > 2 * table_.size() + 64) {
    std::erase_if(table_order_, [&](const std::string& k) { return !table_.count(k); });
  }
}

bool AnnouncementTable::refused_locally(const Announcement& a) const {
  if (a.refused.empty()) return false;
  auto set = sets_->find(a.process_set);
  return set && refused_locally(a, *set);
}

bool AnnouncementTable::refused_locally(const Announcement& a, const ProcessSet& set) {
  return !a.refused.empty() && set.member() && a.refused[static_cast<size_t>(set.my_set_rank)];
}

void AnnouncementTable::erase_announcement(Table::iterator it) {
  for (auto& entry : it->second.deferred) replay_.push_back(std::move(entry));
  table_.erase(it);
}

bool AnnouncementTable::try_complete(const std::string& key, Announcement& a, const ProcessSet& set,
                                     std::vector<Completed>* done) {
  int joined_missing = 0;
  for (int i = 0; i < set.size(); ++i)
    if (!a.have[i] && joined_[set.ranks[i]]) ++joined_missing;
  if (a.count + joined_missing < set.size()) return false;
  if (a.refusals > 0) {
    Response response = refused_response(key, a, set);
    // A refusing rank refuses each member of its group, as many as it passed; a group
    // larger elsewhere (the count was the argument refused) fails its other members
    // with this one, or the ranks that passed them would wait for ever.
    int32_t members = 0, refused_members = INT32_MAX;
    for (int i = 0; i < set.size(); ++i) {
      if (!a.have[i]) continue;
      const int32_t n = a.specs[static_cast<size_t>(i)].group_size;
      members = std::max(members, n);
      if (a.refused[static_cast<size_t>(i)]) refused_members = std::min(refused_members, n);
    }
    const size_t dot = a.name.rfind('.');
    if (members > refused_members && dot != std::string::npos)
      failed_groups_.push_back({a.name.substr(0, dot), a.process_set, members, response.error});
    done->push_back({std::move(response), false});
    return true;
  }
  std::vector<TensorSpec> specs;
  std::vector<int> ranks;
  for (int i = 0; i < set.size(); ++i) {
    if (!a.have[i]) continue;
    specs.push_back(a.specs[i]);
    ranks.push_back(set.ranks[i]);
  }
  Response response = agree(key, a.name, specs, ranks, set.size());
  if (!response.error.ok()) {
    int32_t members = 0;
    for (const TensorSpec& spec : specs) members = std::max(members, spec.group_size);
    const size_t dot = a.name.rfind('.');
    if (members > 0 && dot != std::string::npos)
      failed_groups_.push_back({a.name.substr(0, dot), a.process_set, members, response.error});
  }
  if (joined_missing > 0 && response.error.ok() && response.spec.op != OpType::Allreduce) {
    std::string who;
    for (int i = 0; i < set.size(); ++i)
      if (!a.have[i] && joined_[set.ranks[i]])
        who += (who.empty() ? "" : ", ") + std::to_string(set.ranks[i]);
    response.error = make_error(HVD_ERR_MISMATCH,
                                "tensor '%s': %s cannot run while rank(s) %s have joined "
                                "(hvd_join); only allreduce continues, with joined ranks "
                                "contributing zeros",
                                a.name.c_str(), op_type_name(response.spec.op), who.c_str());
    response.per_rank.clear();
    done->push_back({std::move(response), false});
    return true;
  }
  // A tensor completed with joined ranks absent is not cached: its spec was agreed
  // without them.
  done->push_back({std::move(response), joined_missing == 0});
  return true;
}

Response AnnouncementTable::refused_response(const std::string& key, const Announcement& a,
                                             const ProcessSet& set) const {
  Response response;
  response.key = key;
  response.name = a.name;
  // A spec that some rank's request was made with, where one exists: the executor
  // completes the local requests under it.
  auto first_with = [&](bool unrefused_only) {
    for (int i = 0; i < set.size(); ++i)
      if (a.have[i] && !(unrefused_only && a.refused[static_cast<size_t>(i)])) return i;
    return -1;
  };
  int source = first_with(true);
  if (source < 0) source = first_with(false);
  response.spec = a.specs[static_cast<size_t>(source)];
  response.refused_here = refused_locally(a, set);
  const std::string others =
      a.refusals > 1 ? " (and " + std::to_string(a.refusals - 1) + " other rank(s))" : "";
  response.error = make_error(HVD_ERR_MISMATCH,
                              "%s of tensor '%s' fails on every rank of process set %d: rank %d%s "
                              "refused its call: %s",
                              op_type_name(response.spec.op), a.name.c_str(), a.process_set,
                              a.refusing_rank, others.c_str(), a.refusal.c_str());
  return response;
}

// Every rank pushes a group's members at once, so by the end of the round in which a
// member's agreement failed, each rank that will ever announce the group's other
// members has done so: they fail here with the member's error, on every rank alike.
void AnnouncementTable::fail_group_members(std::vector<Completed>* done) {
  for (const FailedGroup& group : failed_groups_) {
    for (int32_t index = 0; index < group.members; ++index) {
      const std::string name = group.prefix + "." + std::to_string(index);
      auto it = table_.find(TensorQueue::key_of(group.process_set, name));
      if (it == table_.end()) continue;
      const Announcement& a = it->second;
      Response response;
      response.key = it->first;
      response.name = name;
      for (size_t r = 0; r < a.have.size(); ++r)
        if (a.have[r]) {
          response.spec = a.specs[r];
          break;
        }
      response.error = make_error(group.error.status, "tensor '%s' fails with its group: %s",
                                  name.c_str(), group.error.message.c_str());
      response.refused_here = refused_locally(a);
      erase_announcement(it);
      done->push_back({std::move(response), false});
    }
  }
  failed_groups_.clear();
}

void AnnouncementTable::record_join(int world_rank, const std::string& key, const std::string& name,
                                    std::vector<Completed>* done) {
  if (joined_[world_rank]) return;
  joined_[world_rank] = 1;
  last_joined_ = world_rank;
  if (++joined_count_ == world_size_) {
    Response response;
    response.key = key;
    response.name = name;
    response.spec.op = OpType::Join;
    response.spec.process_set = 0;
    response.per_rank = {last_joined_};
    std::fill(joined_.begin(), joined_.end(), 0);
    joined_count_ = 0;
    last_joined_ = -1;
    done->push_back({std::move(response), false});
    return;
  }
  // Tensors that waited only for this rank can run (allreduce) or fail (others) now.
  for (const std::string& k : table_order_) {
    auto it = table_.find(k);
    if (it == table_.end()) continue;
    auto set = sets_->find(it->second.process_set);
    if (set && try_complete(k, it->second, *set, done)) erase_announcement(it);
  }
}

bool AnnouncementTable::blocked_by_join(OpType op, int32_t process_set) const {
  if (op == OpType::Allreduce || op == OpType::Join) return false;
  auto set = sets_->find(process_set);
  if (!set) return false;
  for (int w : set->ranks)
    if (joined_[w]) return true;
  return false;
}

void AnnouncementTable::drop_blocked_by_join() {
  // Every rank holds the same table and the same joined ranks after a round: each
  // drops the same entries.
  for (auto it = table_.begin(); it != table_.end();) {
    const Announcement& a = it->second;
    OpType op = OpType::Allreduce;
    for (size_t i = 0; i < a.have.size(); ++i)
      if (a.have[i]) {
        op = a.specs[i].op;
        break;
      }
    it = blocked_by_join(op, a.process_set) ? table_.erase(it) : std::next(it);
  }
}

void AnnouncementTable::drop_process_set(int32_t id) {
  std::erase_if(table_, [&](const auto& kv) { return kv.second.process_set == id; });
}

std::string AnnouncementTable::unmet_refusals(int my_rank) const {
  std::string out;
  for (const auto& [key, a] : table_) {
    if (a.refusals == 0 || a.refusing_rank == my_rank) continue;
    out += (out.empty() ? "" : "; ") + std::string("rank ") + std::to_string(a.refusing_rank) +
           " refused '" + a.name + "': " + a.refusal;
  }
  return out;
}

std::vector<StalledTensor> AnnouncementTable::stalled(double older_than) const {
  std::vector<StalledTensor> out;
  // A key comes back to table_order_ each time its tensor is announced anew, and the
  // list is compacted only now and then: report each key once.
  std::unordered_set<std::string_view> seen;
  for (const std::string& key : table_order_) {
    if (!seen.insert(key).second) continue;
    auto it = table_.find(key);
    if (it == table_.end() || it->second.first_seen > older_than) continue;
    const Announcement& a = it->second;
    auto set = sets_->find(a.process_set);
    if (!set) continue;
    StalledTensor s{key, a.name, a.process_set, a.first_seen, {}};
    for (int i = 0; i < set->size(); ++i)
      if (!a.have[i]) s.missing_ranks.push_back(set->ranks[i]);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace hvd
