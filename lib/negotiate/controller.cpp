// The Controller's own side of negotiation: this rank's requests (waiting on a cache
// slot, or kept by key and announced), its messages, the responses ready in a round
// and the requests they complete. The bit vector is controller_bits.cpp; what every
// rank announced by name is announcements.cpp.
#include "negotiate/controller.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_set>

#include "base/log.h"
#include "queue/name_table.h"
#include "queue/tensor_queue.h"

namespace hvd {

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
      announcements_(world_size, sets) {}

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
  for (int rank = 0; rank < world_size_; ++rank) {
    WireMessage message;
    Error err = wire_decode(data.data() + displs[rank], static_cast<size_t>(counts[rank]), &message);
    if (!err.ok()) {
      err.message += " (from rank " + std::to_string(rank) + ")";
      return err;
    }
    for (WireEntry& e : message.entries) {
      if (e.kind == WireKind::Tuning) {
        if (rank == 0) {  // only the coordinator tunes
          tuning_received_ = std::move(e.text);
          has_tuning_ = true;
        }
        continue;
      }
      announcements_.apply(rank, std::move(e), now, &completed_);
      announcements_.replay_deferred(now, &completed_);
      queue_completed();
    }
  }
  announcements_.end_of_messages(now, &completed_);
  queue_completed();
  return Error::success();
}

void Controller::queue_completed() {
  // In the order the table completed them: the same on every rank.
  for (Completed& c : completed_) {
    if (c.cacheable)
      add_response(std::move(c.response));
    else
      add_ready(std::move(c.response));
  }
  completed_.clear();
}

std::vector<std::pair<Request, Error>> Controller::take_blocked_by_join() {
  std::vector<std::pair<Request, Error>> out;
  if (!announcements_.any_joined()) return out;
  auto blocked_on = [&](OpType op, int32_t process_set) {
    return announcements_.blocked_by_join(op, process_set);
  };
  announcements_.drop_blocked_by_join();
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
  announcements_.drop_process_set(id);
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
