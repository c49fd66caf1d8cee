#include "queue/process_sets.h"

#include <algorithm>

namespace hvd {

void ProcessSetTable::add(std::shared_ptr<ProcessSet> set) {
  std::lock_guard<std::mutex> lock(mutex_);
  next_id_ = std::max(next_id_, set->id + 1);
  if (set->id == 0 && !has_global_.load(std::memory_order_relaxed)) {
    global_ = set;
    has_global_.store(true, std::memory_order_release);
  }
  sets_[set->id] = std::move(set);
}

std::shared_ptr<ProcessSet> ProcessSetTable::find(int32_t id) const {
  if (id == 0 && has_global_.load(std::memory_order_acquire)) return global_;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(id);
  return it == sets_.end() ? nullptr : it->second;
}

std::shared_ptr<ProcessSet> ProcessSetTable::remove(int32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return nullptr;
  auto set = it->second;
  sets_.erase(it);
  return set;
}

std::vector<int32_t> ProcessSetTable::ids() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int32_t> out;
  for (auto& kv : sets_) out.push_back(kv.first);
  return out;
}

int32_t ProcessSetTable::next_id() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_id_;
}

std::shared_ptr<ProcessSet> ProcessSetTable::find_by_ranks(const std::vector<int>& ranks) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& kv : sets_)
    if (kv.second->ranks == ranks) return kv.second;
  return nullptr;
}

std::vector<std::shared_ptr<ProcessSet>> ProcessSetTable::all() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<ProcessSet>> out;
  for (auto& kv : sets_) out.push_back(kv.second);
  return out;
}

std::shared_ptr<ProcessSet> make_process_set(int32_t id, const std::vector<int>& ranks,
                                             MPI_Comm world, int world_rank, int world_size) {
  auto set = std::make_shared<ProcessSet>();
  set->id = id;
  set->ranks = ranks;
  set->set_rank_of.assign(world_size, -1);
  for (size_t i = 0; i < ranks.size(); ++i) set->set_rank_of[ranks[i]] = static_cast<int>(i);
  set->my_set_rank = set->set_rank_of[world_rank];
  int color = set->member() ? 0 : MPI_UNDEFINED;
  MPI_Comm_split(world, color, set->my_set_rank, &set->comm);
  return set;
}

}  // namespace hvd
