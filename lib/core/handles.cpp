#include "core/handles.h"

#include <chrono>
#include <thread>

namespace hvd {

void HandleState::complete(const Error& result) {
  if (!result.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.ok()) error_ = result;
  }
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    done_.store(1, std::memory_order_release);
    done_.notify_all();
  }
}

void HandleState::wait(int64_t spin_us) const {
  if (done()) return;
  auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return;
  }
  while (!done()) done_.wait(0, std::memory_order_acquire);
}

void HandleState::publish_stream_waiter(StreamWaiter waiter) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiter_ = std::move(waiter);
  }
  queued_.store(true, std::memory_order_release);
}

HandleState::StreamWaiter HandleState::wait_for_device_queue() const {
  // Queuing follows negotiation closely; a short sleep between checks is enough.
  while (!queued_.load(std::memory_order_acquire) && !done())
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  std::lock_guard<std::mutex> lock(mutex_);
  return waiter_;
}

Error HandleState::result() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

hvd_handle_t HandleTable::add(std::shared_ptr<HandleState> state) {
  std::lock_guard<std::mutex> lock(mutex_);
  hvd_handle_t h = next_++;
  handles_.emplace(h, std::move(state));
  return h;
}

std::shared_ptr<HandleState> HandleTable::find(hvd_handle_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = handles_.find(handle);
  return it == handles_.end() ? nullptr : it->second;
}

std::shared_ptr<HandleState> HandleTable::take(hvd_handle_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = handles_.find(handle);
  if (it == handles_.end()) return nullptr;
  auto state = std::move(it->second);
  handles_.erase(it);
  return state;
}

size_t HandleTable::size() {
  std::lock_guard<std::mutex> lock(mutex_);
  return handles_.size();
}

}  // namespace hvd
