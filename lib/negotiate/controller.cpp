#include "negotiate/controller.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_set>

#include "base/log.h"
#include "negotiate/agreement.h"
#include "queue/name_table.h"
#include "queue/tensor_queue.h"

namespace hvd {

namespace {
constexpr uint64_t kFlagNoAnnouncements = 1;
constexpr uint64_t kFlagNotBusy = 2;
constexpr uint64_t kFlagNoShutdown = 4;
constexpr uint64_t kFlagOnlyCached = 8;  // all pending work waits on cache slots
constexpr uint64_t kFlagCpusFree = 16;   // this rank's CPUs are free for overlap
constexpr uint64_t kFlagNearCores = 32;  // this rank saw no node's ranks on far cores
constexpr uint64_t kFlagBackToBack = 64; // this rank's large allreduces lie back to back

// Index of the lowest set bit of a non-zero word: the next slot in a bitmap scan.
int lowest_bit(uint64_t x) { return __builtin_ctzll(x); }
}  // namespace

Controller::Controller(int world_rank, int world_size, size_t cache_capacity,
                       ProcessSetTable* sets)
    : world_rank_(world_rank),
      world_size_(world_size),
      cache_capacity_(cache_capacity),
      cache_enabled_(cache_capacity > 0),
      words_((cache_capacity + 63) / 64),
      sets_(sets),
      cache_(cache_capacity),
      churn_(cache_capacity),
      waiting_(cache_capacity),
      waiting_bits_(words_, 0),
      joined_(static_cast<size_t>(world_size), 0) {}

bool Controller::joined_locally() const {
  for (const auto& kv : pending_)
    if (kv.second.request.spec.op == OpType::Join) return true;
  return false;  // a join is never cached, so never waits on a slot
}

const std::string& Controller::add_pending(Local&& local) {
  auto node = spare_pending_.take();
  TensorKey& key = node.key();
  TensorQueue::key_into(local.request.spec.process_set, local.request.name, &key.str);
  key.hash = local.request.key_hash ? local.request.key_hash : hash_key(key.str);
  node.mapped() = std::move(local);
  return pending_.insert(std::move(node)).position->first.str;
}

void Controller::release_slot(int slot) {
  waiting_bits_[slot / 64] &= ~(uint64_t{1} << (slot % 64));
  --waiting_count_;
}

Controller::Local Controller::take_waiting(int slot) {
  release_slot(slot);
  return std::move(waiting_[slot]);
}

void Controller::stop_waiting(int slot) {
  if (!waiting_on(slot)) return;
  Local local = take_waiting(slot);
  local.announced = false;
  unannounced_.push_back(add_pending(std::move(local)));
}

void Controller::intake(std::vector<Request>&& requests) {
  // Requests come in runs of one process set: look the set up once per run.
  int32_t set_id = -1;
  std::shared_ptr<ProcessSet> set;
  const double now = now_seconds();
  for (Request& r : requests) {
    const int slot = cached_slot(r);
    if (slot >= 0) {
      if (r.spec.process_set != set_id || !set) {
        set = sets_->find(r.spec.process_set);
        set_id = r.spec.process_set;
      }
      int set_rank = set ? set->my_set_rank : -1;
      int set_size = set ? set->size() : 0;
      const Response& cached = cache_.at(slot);
      // Only allgather and alltoall specs differ per rank; the rest compare as cached.
      const bool same = cached.spec.op == OpType::Allgather || cached.spec.op == OpType::Alltoall
                            ? cached.spec_for(set_rank, set_size) == r.spec
                            : cached.spec == r.spec;
      // A name is in flight once, so its slot has no other request waiting.
      if (same && !waiting_on(slot)) {
        Local& local = waiting_[slot];
        local.request = std::move(r);
        local.announced = false;
        local.since = now;
        waiting_bits_[slot / 64] |= uint64_t{1} << (slot % 64);
        ++waiting_count_;
        continue;
      }
      if (!same) invalid_slots_.push_back(slot);
    }
    Local local;
    local.since = now;
    local.request = std::move(r);
    unannounced_.push_back(add_pending(std::move(local)));
  }
}

void Controller::refuse(std::vector<Refusal>&& refusals) {
  for (Refusal& r : refusals) {
    WireEntry e;
    e.kind = WireKind::Refused;
    e.spec.op = r.op;
    e.spec.process_set = r.process_set;
    e.spec.group_size = r.group_size;
    // The other ranks' requests may wait on the tensor's cache slot, where a refusal
    // never arrives: dropping the slot sends them to announcements.
    if (cache_.capacity() > 0) {
      const int slot = cache_.find(TensorQueue::key_of(r.process_set, r.name));
      if (slot >= 0) invalid_slots_.push_back(slot);
    }
    e.name = std::move(r.name);
    e.text = std::move(r.message);
    refusals_.push_back(std::move(e));
  }
}

int Controller::cached_slot(const Request& r) {
  if (cache_.capacity() == 0) return -1;
  NameEntry* entry = r.name_entry;
  if (entry && entry->cache_slot >= 0 && entry->cache_slot < static_cast<int>(cache_.capacity()) &&
      cache_.at(entry->cache_slot).version == entry->cache_version)
    return entry->cache_slot;
  const std::string* key = &r.name;  // the global set's keys are the names
  if (r.spec.process_set != 0) {
    TensorQueue::key_into(r.spec.process_set, r.name, &scratch_key_);
    key = &scratch_key_;
  }
  const int slot = cache_.find(*key, r.key_hash);
  if (entry) {
    entry->cache_slot = slot;
    entry->cache_version = slot >= 0 ? cache_.at(slot).version : 0;
  }
  return slot;
}

bool Controller::has_cached_wait_before(double time) const {
  for (size_t w = 0; w < waiting_bits_.size(); ++w)
    for (uint64_t x = waiting_bits_[w]; x; x &= x - 1)
      if (waiting_[w * 64 + lowest_bit(x)].since < time) return true;
  return false;
}

void Controller::fill_bits(uint64_t* words, bool shutdown_requested, double stale_before,
                           const RankWords& mine) const {
  std::fill(words, words + words_, 0);
  std::fill(words + words_, words + 3 * words_, ~uint64_t{0});
  // Slots of sets this rank is not in are always "ready" here. Only slots outside the
  // global set need a look, and membership is looked up once per set, not once per
  // slot (the table takes a lock).
  const std::vector<uint64_t>& other_set = cache_.other_set_words();
  std::unordered_map<int32_t, bool> member;
  for (size_t w = 0; w < other_set.size(); ++w) {
    for (uint64_t x = other_set[w]; x; x &= x - 1) {
      const int slot = static_cast<int>(w * 64) + lowest_bit(x);
      const int32_t id = cache_.at(slot).spec.process_set;
      auto it = member.find(id);
      if (it == member.end()) {
        auto set = sets_->find(id);
        it = member.emplace(id, set && set->member()).first;
      }
      if (!it->second) words[w] |= uint64_t{1} << (slot % 64);
    }
  }
  // A joined rank takes part in every cached allreduce of its sets with zeros.
  if (joined_locally()) {
    const std::vector<uint64_t>& occupied = cache_.occupied_words();
    for (size_t w = 0; w < occupied.size(); ++w)
      for (uint64_t x = occupied[w]; x; x &= x - 1) {
        const int slot = static_cast<int>(w * 64) + lowest_bit(x);
        if (cache_.at(slot).spec.op == OpType::Allreduce) words[w] |= uint64_t{1} << (slot % 64);
      }
  }
  // Requests kept by key are announced, not cached.
  const bool only_cached =
      unannounced_.empty() && decisions_.empty() && refusals_.empty() && pending_.empty();
  for (size_t w = 0; w < waiting_bits_.size(); ++w) {
    const uint64_t waiting = waiting_bits_[w];
    words[w] |= waiting;
    words[2 * words_ + w] &= ~waiting;
    for (uint64_t x = waiting; x; x &= x - 1) {
      const int bit = lowest_bit(x);
      if (waiting_[w * 64 + bit].since < stale_before) words[words_ + w] &= ~(uint64_t{1} << bit);
    }
  }
  for (int slot : invalid_slots_) words[words_ + slot / 64] &= ~(uint64_t{1} << (slot % 64));
  uint64_t flags = 0;
  if (unannounced_.empty() && decisions_.empty() && refusals_.empty()) flags |= kFlagNoAnnouncements;
  if (!busy()) flags |= kFlagNotBusy;
  if (!shutdown_requested) flags |= kFlagNoShutdown;
  if (only_cached) flags |= kFlagOnlyCached;
  if (mine.cpus_free) flags |= kFlagCpusFree;
  if (mine.near_cores) flags |= kFlagNearCores;
  if (mine.back_to_back) flags |= kFlagBackToBack;
  words[3 * words_] = flags;
}

RoundFlags Controller::apply_bits(const uint64_t* words) {
  RoundFlags flags;
  uint64_t f = words[3 * words_];
  flags.any_announcements = !(f & kFlagNoAnnouncements);
  flags.any_busy = !(f & kFlagNotBusy);
  flags.shutdown = !(f & kFlagNoShutdown);
  flags.only_cached = (f & kFlagOnlyCached) != 0;
  flags.cpus_free = (f & kFlagCpusFree) != 0;
  flags.near_cores = (f & kFlagNearCores) != 0;
  flags.back_to_back = (f & kFlagBackToBack) != 0;
  invalid_slots_.clear();

  // Word by word, in slot order (every rank must apply the same slots in the same
  // order); forget_slot changes the bitmap, so each word is read before its slots go.
  const std::vector<uint64_t>& occupied = cache_.occupied_words();
  bool any_invalid = false;
  for (size_t w = 0; w < words_; ++w) {
    for (uint64_t x = ~words[words_ + w] & occupied[w]; x; x &= x - 1) {
      forget_slot(static_cast<int>(w * 64) + lowest_bit(x));
      any_invalid = true;
    }
  }
  // An invalidated slot sends its requests back through announcements this round;
  // they no longer wait on the cache, so the loop must not go idle on them.
  if (any_invalid) {
    flags.any_announcements = true;
    flags.only_cached = false;
  }

  // Ready: every rank is ready (or joined, or outside the set) and some rank has a
  // request. Without the second condition the round in which the last ranks join
  // would run every cached allreduce of the job on zeros alone.
  for (size_t w = 0; w < words_; ++w) {
    for (uint64_t x = words[w] & ~words[2 * words_ + w] & occupied[w]; x; x &= x - 1) {
      const int slot = static_cast<int>(w * 64) + lowest_bit(x);
      cache_.touch(slot);
      add_ready(cache_.at(slot));
    }
  }
  return flags;
}

void Controller::forget_slot(int slot) {
  stop_waiting(slot);
  cache_.erase(slot);
}

size_t Controller::set_cache_enabled(bool enabled) {
  enabled = enabled && cache_capacity_ > 0;
  if (enabled == cache_enabled_) return 0;
  size_t sent_back = 0;
  // Slot order, so the announcements come in a stable order.
  for (size_t slot = 0; slot < cache_.capacity(); ++slot) {
    if (!waiting_on(static_cast<int>(slot))) continue;
    stop_waiting(static_cast<int>(slot));
    ++sent_back;
  }
  invalid_slots_.clear();
  cache_enabled_ = enabled;
  cache_ = ResponseCache(enabled ? cache_capacity_ : 0);
  churn_ = CacheChurn(cache_.capacity());
  words_ = (cache_.capacity() + 63) / 64;
  waiting_ = std::vector<Local>(cache_.capacity());
  waiting_bits_.assign(words_, 0);
  HVD_LOG(Debug, "response cache %s (%zu waiting requests announced again)",
          enabled ? "on" : "off", sent_back);
  return sent_back;
}

void Controller::encode_message(std::vector<uint8_t>* out) {
  WireMessage message;
  const double now = now_seconds();
  for (WireEntry& r : refusals_) message.entries.push_back(std::move(r));
  refusals_.clear();
  for (const std::string& key : unannounced_) {
    auto it = pending_.find(key);
    if (it == pending_.end() || it->second.announced) continue;
    it->second.announced = true;
    WireEntry e;
    e.kind = WireKind::Request;
    e.name = it->second.request.name;
    e.spec = it->second.request.spec;
    e.waited = std::max(0.0, now - it->second.since);
    message.entries.push_back(std::move(e));
  }
  unannounced_.clear();
  for (WireEntry& d : decisions_) message.entries.push_back(std::move(d));
  decisions_.clear();
  wire_encode(message, out);
}

Error Controller::apply_messages(const std::vector<uint8_t>& data, const std::vector<int>& counts,
                                 const std::vector<int>& displs) {
  double now = now_seconds();
  auto replay = [&] {
    while (!replay_.empty()) {
      std::vector<std::pair<int, WireEntry>> entries = std::move(replay_);
      replay_.clear();
      for (auto& [rank, e] : entries) apply_entry(rank, std::move(e), now);
    }
  };
  for (int rank = 0; rank < world_size_; ++rank) {
    WireMessage message;
    Error err = wire_decode(data.data() + displs[rank], static_cast<size_t>(counts[rank]), &message);
    if (!err.ok()) {
      err.message += " (from rank " + std::to_string(rank) + ")";
      return err;
    }
    for (WireEntry& e : message.entries) {
      apply_entry(rank, std::move(e), now);
      replay();
    }
  }
  fail_group_members();
  replay();
  if (table_order_.size() > 2 * table_.size() + 64) {
    std::erase_if(table_order_, [&](const std::string& k) { return !table_.count(k); });
  }
  return Error::success();
}

void Controller::apply_entry(int rank, WireEntry&& e, double now) {
  if (e.kind == WireKind::Tuning) {
    if (rank == 0) {  // only the coordinator tunes
      tuning_received_ = e.text;
      has_tuning_ = true;
    }
    return;
  }
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
    add_ready(std::move(response));
    return;
  }
  if (e.spec.op == OpType::Join) {
    record_join(rank, key, e.name);
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
  if (try_complete(key, a, *set)) erase_announcement(it);
}

bool Controller::refused_locally(const Announcement& a) const {
  if (a.refused.empty()) return false;
  auto set = sets_->find(a.process_set);
  return set && refused_locally(a, *set);
}

bool Controller::refused_locally(const Announcement& a, const ProcessSet& set) {
  return !a.refused.empty() && set.member() && a.refused[static_cast<size_t>(set.my_set_rank)];
}

void Controller::erase_announcement(std::unordered_map<std::string, Announcement>::iterator it) {
  for (auto& entry : it->second.deferred) replay_.push_back(std::move(entry));
  table_.erase(it);
}

bool Controller::try_complete(const std::string& key, Announcement& a, const ProcessSet& set) {
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
    add_ready(std::move(response));
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
    add_ready(std::move(response));
    return true;
  }
  // A tensor completed with joined ranks absent is not cached: its spec was agreed
  // without them.
  if (joined_missing > 0)
    add_ready(std::move(response));
  else
    add_response(std::move(response));
  return true;
}

Response Controller::refused_response(const std::string& key, const Announcement& a,
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
void Controller::fail_group_members() {
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
      add_ready(std::move(response));
    }
  }
  failed_groups_.clear();
}

void Controller::record_join(int world_rank, const std::string& key, const std::string& name) {
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
    add_ready(std::move(response));
    return;
  }
  // Tensors that waited only for this rank can run (allreduce) or fail (others) now.
  for (const std::string& k : table_order_) {
    auto it = table_.find(k);
    if (it == table_.end()) continue;
    auto set = sets_->find(it->second.process_set);
    if (set && try_complete(k, it->second, *set)) erase_announcement(it);
  }
}

std::vector<std::pair<Request, Error>> Controller::take_blocked_by_join() {
  std::vector<std::pair<Request, Error>> out;
  if (joined_count_ == 0) return out;
  auto blocked_on = [&](OpType op, int32_t process_set) {
    if (op == OpType::Allreduce || op == OpType::Join) return false;
    auto set = sets_->find(process_set);
    if (!set) return false;
    for (int w : set->ranks)
      if (joined_[w]) return true;
    return false;
  };
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
    it = blocked_on(op, a.process_set) ? table_.erase(it) : std::next(it);
  }
  // A tensor that completed this round before a join was recorded runs as agreed.
  std::unordered_set<std::string_view> ready_keys;
  for (size_t i = 0; i < ready_count_; ++i) ready_keys.insert(ready_[i].key);
  auto blocked_error = [](const Request& r) {
    return make_error(HVD_ERR_MISMATCH,
                      "tensor '%s': %s cannot run while ranks have joined (hvd_join); only "
                      "allreduce continues, with joined ranks contributing zeros",
                      r.name.c_str(), op_type_name(r.spec.op));
  };
  bool took = false;
  for (auto it = pending_.begin(); it != pending_.end();) {
    const Request& r = it->second.request;
    const bool blocked =
        blocked_on(r.spec.op, r.spec.process_set) && !ready_keys.count(it->first.str);
    if (!blocked) {
      ++it;
      continue;
    }
    Error err = blocked_error(r);
    out.emplace_back(std::move(it->second.request), std::move(err));
    it = pending_.erase(it);
    took = true;
  }
  for (size_t slot = 0; slot < waiting_.size(); ++slot) {
    const int s = static_cast<int>(slot);
    if (!waiting_on(s)) continue;
    const Request& r = waiting_[slot].request;
    if (!blocked_on(r.spec.op, r.spec.process_set) || ready_keys.count(cache_.at(s).key)) continue;
    Error err = blocked_error(r);
    out.emplace_back(std::move(take_waiting(s).request), std::move(err));
  }
  if (took) std::erase_if(unannounced_, [&](const std::string& k) { return !pending_.count(k); });
  return out;
}

std::vector<Request> Controller::drop_process_set(int32_t id) {
  std::vector<Request> out;
  for (size_t slot = 0; slot < cache_.capacity(); ++slot) {
    int s = static_cast<int>(slot);
    if (!cache_.occupied(s) || cache_.at(s).spec.process_set != id) continue;
    if (waiting_on(s)) out.push_back(std::move(take_waiting(s).request));
    cache_.erase(s);
  }
  std::erase_if(table_, [&](const auto& kv) { return kv.second.process_set == id; });
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.request.spec.process_set != id) {
      ++it;
      continue;
    }
    out.push_back(std::move(it->second.request));
    it = pending_.erase(it);
  }
  std::erase_if(unannounced_, [&](const std::string& k) { return !pending_.count(k); });
  return out;
}

void Controller::add_response(Response&& response) {
  if (response.error.ok() && cache_.capacity() > 0) {
    std::string evicted;
    const int slot = cache_.put(response, &evicted);
    // The evicted tensor's slot now holds this one: a request waiting for the evicted
    // one is announced by name instead.
    if (!evicted.empty()) {
      stop_waiting(slot);
      churn_.evicted(evicted);
    }
    if (slot >= 0 && churn_.inserted(cache_.at(slot).key) && world_rank_ == 0)
      HVD_LOG(Warning,
              "the response cache holds %zu tensors (HOROVOD_CACHE_CAPACITY) and %zu tensors "
              "have come back after it evicted them: the steps cycle through more tensors "
              "than it holds, so each of them is negotiated by name every step, several "
              "times the cost of a cached one. Set HOROVOD_CACHE_CAPACITY above the number "
              "of tensors a step reduces.",
              cache_.capacity(), churn_.returned());
  }
  add_ready(std::move(response));
}

size_t Controller::take_ready(std::vector<Response>* out) {
  out->swap(ready_);
  const size_t count = ready_count_;
  ready_count_ = 0;
  return count;
}

void Controller::add_ready(const Response& response) {
  // Assigning into an element left from an earlier round reuses its strings' memory;
  // in steady state the element there is often a copy of this very cached response
  // (the same tensors run in the same order every step), and then nothing is copied.
  if (ready_count_ < ready_.size()) {
    Response& element = ready_[ready_count_];
    if (response.version == 0 || element.version != response.version ||
        element.cache_slot != response.cache_slot)
      element = response;
  } else {
    ready_.push_back(response);
  }
  ++ready_count_;
}

void Controller::add_ready(Response&& response) {
  if (ready_count_ < ready_.size()) {
    ready_[ready_count_] = std::move(response);
  } else {
    ready_.push_back(std::move(response));
  }
  ++ready_count_;
}

const Request* Controller::find_local_on_slot(int slot) const {
  if (slot < 0 || static_cast<size_t>(slot) >= waiting_.size() || !waiting_on(slot)) return nullptr;
  return &waiting_[slot].request;
}

int Controller::local_slot(const Response& response) const {
  // A response read from the cache finds its request by slot: whatever waits there
  // waits for the tensor the slot holds (a slot's request leaves it before the slot
  // changes hands), and the slot held this response's tensor if the hashes agree.
  const int slot = response.cache_slot;
  if (slot >= 0 && static_cast<size_t>(slot) < waiting_.size() && waiting_on(slot) &&
      cache_.at(slot).key_hash == TensorKeyRef(response.key, response.key_hash).hash)
    return slot;
  return -1;
}

bool Controller::take_local(const Response& response, Request* out) {
  if (response.refused_here) return false;  // a request under its key is a later call
  if (const int slot = local_slot(response); slot >= 0) {
    release_slot(slot);
    *out = std::move(waiting_[slot].request);  // one move, not two through a Local
    return true;
  }
  auto it = pending_.find(TensorKeyRef(response.key, response.key_hash));
  if (it == pending_.end()) return false;
  auto node = pending_.extract(it);
  *out = std::move(node.mapped().request);
  spare_pending_.give(std::move(node));
  return true;
}

Request* Controller::take_local_in_place(const Response& response,
                                         std::vector<Request>* announced) {
  if (response.refused_here) return nullptr;  // a request under its key is a later call
  if (const int slot = local_slot(response); slot >= 0) {
    release_slot(slot);
    return &waiting_[slot].request;
  }
  auto it = pending_.find(TensorKeyRef(response.key, response.key_hash));
  if (it == pending_.end()) return nullptr;
  auto node = pending_.extract(it);
  announced->push_back(std::move(node.mapped().request));
  spare_pending_.give(std::move(node));
  return &announced->back();
}

std::vector<Request> Controller::take_all_local() {
  std::vector<Request> out;
  for (size_t slot = 0; slot < waiting_.size(); ++slot)
    if (waiting_on(static_cast<int>(slot)))
      out.push_back(std::move(take_waiting(static_cast<int>(slot)).request));
  for (auto& kv : pending_) out.push_back(std::move(kv.second.request));
  pending_.clear();
  unannounced_.clear();
  return out;
}

std::vector<Controller::Stalled> Controller::stalled(double older_than) const {
  std::vector<Stalled> out;
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
    Stalled s{key, a.name, a.process_set, a.first_seen, {}};
    for (int i = 0; i < set->size(); ++i)
      if (!a.have[i]) s.missing_ranks.push_back(set->ranks[i]);
    out.push_back(std::move(s));
  }
  return out;
}

std::string Controller::describe_pending(size_t max_names) const {
  std::string out;
  size_t listed = 0;
  OpType last = OpType::Join;
  bool first = true;
  std::vector<const Request*> all;
  for (const auto& kv : pending_) all.push_back(&kv.second.request);
  for (size_t slot = 0; slot < waiting_.size(); ++slot)
    if (waiting_on(static_cast<int>(slot))) all.push_back(&waiting_[slot].request);
  for (const Request* r : all) {
    if (listed == max_names) return out + ", ... (" + std::to_string(all.size()) + " tensors)";
    if (first || r->spec.op != last) out += std::string(first ? "" : ", ") + op_type_name(r->spec.op) + " of ";
    else out += ", ";
    out += "'" + r->name + "'";
    last = r->spec.op;
    first = false;
    ++listed;
  }
  return out;
}

void Controller::send_tuning(const std::string& blob) {
  WireEntry e;
  e.kind = WireKind::Tuning;
  e.name = "autotune";
  e.text = blob;
  decisions_.push_back(std::move(e));
}

bool Controller::take_tuning(std::string* blob) {
  if (!has_tuning_) return false;
  has_tuning_ = false;
  *blob = std::move(tuning_received_);
  return true;
}

void Controller::decide_timeout(const Stalled& stalled, const std::string& message) {
  WireEntry e;
  e.kind = WireKind::Timeout;
  e.name = stalled.name;
  e.spec.process_set = stalled.process_set;
  e.text = message;
  decisions_.push_back(std::move(e));
}

}  // namespace hvd
