// Handles: the completion state of an enqueued operation, shared by the user thread
// that waits and the background thread that completes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/error.h"

namespace hvd {

class HandleState {
 public:
  explicit HandleState(int parts = 1) : remaining_(parts) {}

  // Completes one part; the handle is done when every part is. The first error wins.
  void complete(const Error& result);
  bool done() const { return done_.load(std::memory_order_acquire) != 0; }
  // Blocks until done: polls for spin_us, then sleeps on the futex.
  void wait(int64_t spin_us) const;
  Error result() const;

  // Device operations: once queued on the device, the background thread publishes how
  // to make a stream wait for the result (hvd_stream_wait).
  using StreamWaiter = std::function<Error(void* stream)>;
  void publish_stream_waiter(StreamWaiter waiter);
  // Blocks until the waiter is published or the handle is done; returns the waiter
  // (empty when the operation completed without one).
  StreamWaiter wait_for_device_queue() const;

 private:
  std::atomic<bool> queued_{false};
  StreamWaiter waiter_;  // guarded by mutex_
  std::atomic<int> remaining_;
  std::atomic<int> done_{0};
  mutable std::mutex mutex_;
  Error error_;
};

class HandleTable {
 public:
  hvd_handle_t add(std::shared_ptr<HandleState> state);
  std::shared_ptr<HandleState> find(hvd_handle_t handle);
  std::shared_ptr<HandleState> take(hvd_handle_t handle);  // find and remove
  size_t size();

 private:
  std::mutex mutex_;
  std::unordered_map<hvd_handle_t, std::shared_ptr<HandleState>> handles_;
  hvd_handle_t next_ = 1;
};

}  // namespace hvd
