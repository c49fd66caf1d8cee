#include "observe/step_stats.h"

#include <algorithm>

namespace hvd {

StepStats& step_stats() {
  // Never destroyed, as the handle table (runtime/enqueue.cpp): a thread still in hvd_wait
  // when exit() runs elsewhere adds its wait here. It holds nothing to flush.
  static StepStats& stats = *new StepStats;
  return stats;
}

void StepStats::start(bool enabled, int64_t warmup) {
  std::lock_guard<std::mutex> lock(mutex_);
  enabled_.store(enabled);
  ever_started_.store(true);
  measuring_.store(enabled && warmup <= 0);
  wait_ns_.store(0);
  negotiate_ns_.store(0);
  copy_ns_.store(0);
  transfer_ns_.store(0);
  peer_wait_ns_.store(0);
  bytes_.store(0);
  bus_bytes_.store(0);
  reference_bw_.store(0);
  warmup_ = warmup;
  marked_ = false;
  have_start_ = false;
  start_t_ = 0;
  at_start_ = Counters{};
  recorded_ = 0;
  totals_ = StepTotals{};
  for (StepTotals& s : last_) s = StepTotals{};
  waits_by_name_.clear();
}

void StepStats::add_wait(std::string_view name, int64_t ns) {
  wait_ns_.fetch_add(ns, std::memory_order_relaxed);
  if (!measuring_.load(std::memory_order_relaxed) || name.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = waits_by_name_.find(std::string(name));  // only a wait that blocked pays it
  if (it != waits_by_name_.end())
    it->second += ns;
  else if (waits_by_name_.size() < kMaxNames)
    waits_by_name_.emplace(name, ns);
}

StepStats::Counters StepStats::read_counters() const {
  Counters c;
  c.wait_ns = wait_ns_.load(std::memory_order_relaxed);
  c.negotiate_ns = negotiate_ns_.load(std::memory_order_relaxed);
  c.copy_ns = copy_ns_.load(std::memory_order_relaxed);
  c.transfer_ns = transfer_ns_.load(std::memory_order_relaxed);
  c.peer_wait_ns = peer_wait_ns_.load(std::memory_order_relaxed);
  c.bytes = bytes_.load(std::memory_order_relaxed);
  c.bus_bytes = bus_bytes_.load(std::memory_order_relaxed);
  return c;
}

namespace {

void add_to(StepTotals* sum, const StepTotals& step, int sign) {
  sum->steps += sign * step.steps;
  sum->step_s += sign * step.step_s;
  sum->wait_s += sign * step.wait_s;
  sum->negotiate_s += sign * step.negotiate_s;
  sum->copy_s += sign * step.copy_s;
  sum->transfer_s += sign * step.transfer_s;
  sum->peer_wait_s += sign * step.peer_wait_s;
  sum->bytes += sign * step.bytes;
  sum->bus_bytes += sign * step.bus_bytes;
}

}  // namespace

bool StepStats::boundary(double t, bool mark, double* step_s, double* wait_s) {
  if (!enabled()) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  if (mark) {
    if (!marked_) have_start_ = false;  // detection's step in progress is not a marked one
    marked_ = true;
  } else if (marked_) {
    return false;
  }
  const Counters now = read_counters();
  bool measured = false;
  if (have_start_ && t >= start_t_) {
    ++recorded_;
    if (recorded_ > warmup_) {
      constexpr double ns = 1e-9;
      StepTotals step;
      step.steps = 1;
      step.step_s = t - start_t_;
      step.wait_s = static_cast<double>(now.wait_ns - at_start_.wait_ns) * ns;
      step.negotiate_s = static_cast<double>(now.negotiate_ns - at_start_.negotiate_ns) * ns;
      step.copy_s = static_cast<double>(now.copy_ns - at_start_.copy_ns) * ns;
      step.transfer_s = static_cast<double>(now.transfer_ns - at_start_.transfer_ns) * ns;
      step.peer_wait_s = static_cast<double>(now.peer_wait_ns - at_start_.peer_wait_ns) * ns;
      step.bytes = now.bytes - at_start_.bytes;
      step.bus_bytes = static_cast<double>(now.bus_bytes - at_start_.bus_bytes);
      last_[static_cast<size_t>(totals_.steps) % kKeptSteps] = step;
      add_to(&totals_, step, 1);
      if (step_s) *step_s = step.step_s;
      if (wait_s) *wait_s = step.wait_s;
      measured = true;
    }
    if (recorded_ >= warmup_) measuring_.store(true, std::memory_order_relaxed);
  }
  have_start_ = true;
  start_t_ = t;
  at_start_ = now;
  return measured;
}

StepTotals StepStats::totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return totals_;
}

StepTotals StepStats::totals_of_first(int64_t steps) const {
  std::lock_guard<std::mutex> lock(mutex_);
  StepTotals sum = totals_;
  const int64_t oldest_kept = std::max<int64_t>(0, totals_.steps - static_cast<int64_t>(kKeptSteps));
  for (int64_t k = totals_.steps - 1; k >= std::max(steps, oldest_kept); --k)
    add_to(&sum, last_[static_cast<size_t>(k) % kKeptSteps], -1);
  return sum;
}

std::vector<TensorWait> StepStats::top_tensors(size_t n) const {
  std::vector<TensorWait> all;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    all.reserve(waits_by_name_.size());
    for (const auto& [name, ns] : waits_by_name_)
      all.push_back(TensorWait{name, static_cast<double>(ns) * 1e-9});
  }
  const size_t keep = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), all.end(),
                    [](const TensorWait& a, const TensorWait& b) {
                      return a.wait_s != b.wait_s ? a.wait_s > b.wait_s : a.name < b.name;
                    });
  all.resize(keep);
  return all;
}

}  // namespace hvd
