// Handles: the completion state of an enqueued operation, shared by the user thread
// that waits and the background thread that completes it.
//
// States live in a pool and are reused: a training step enqueues hundreds of small
// tensors, and an allocation, a hash-map node and a reference count per tensor were a
// measurable share of its cost. A handle is a slot index plus a generation, so a
// handle that was already waited for is recognized as unknown even after its slot
// holds another operation.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/spin_lock.h"
#include "hvd/hvd.h"

namespace hvd {

class HandleState {
 public:
  HandleState() = default;

  // Completes one part; the handle is done when every part is. The first error wins.
  void complete(const Error& result);
  bool done() const { return done_.load(std::memory_order_acquire) != 0; }
  // Blocks until done: polls for spin_us, then sleeps on the futex. blocked_ns, when
  // given, receives how long it blocked (for the step accounting: runtime/enqueue.h,
  // wait_counted).
  void wait(int64_t spin_us, int64_t* blocked_ns = nullptr) const;
  // The tensor name set_name gave (empty when none was).
  std::string_view name() const { return std::string_view(name_.get(), name_size_); }
  // The tensor waited on, for step accounting (set at enqueue, before the handle is
  // published, only while step accounting is on).
  void set_name(std::string_view name) {
    if (name.size() > name_capacity_) {
      name_ = std::make_unique<char[]>(name.size());
      name_capacity_ = name.size();
    }
    if (!name.empty()) std::memcpy(name_.get(), name.data(), name.size());
    name_size_ = name.size();
  }
  // TensorQueue::drains() when the operation was queued (set by the queue's push).
  void set_queued_at(uint64_t drains) { queued_at_.store(drains, std::memory_order_relaxed); }
  uint64_t queued_at() const { return queued_at_.load(std::memory_order_relaxed); }
  Error result() const;
  // Read after done(): whether it failed (result() then says how).
  bool failed() const { return has_error_.load(std::memory_order_acquire); }

  // Device operations: once queued on the device, the background thread publishes how
  // to make a stream wait for the result (hvd_stream_wait).
  using StreamWaiter = std::function<Error(void* stream)>;
  void publish_stream_waiter(StreamWaiter waiter);
  // Blocks until the waiter is published or the handle is done; returns the waiter
  // (empty when the operation completed without one).
  StreamWaiter wait_for_device_queue() const;

 private:
  friend class HandleTable;
  // Prepares a pooled state for a new operation of `parts` parts.
  void reset(int parts);

  std::atomic<bool> queued_{false};
  std::atomic<uint64_t> queued_at_{0};
  StreamWaiter waiter_;  // guarded by mutex_ (but see reset())
  std::atomic<int> remaining_{1};
  std::atomic<int> done_{0};
  std::atomic<bool> has_error_{false};  // error_ holds a failure
  mutable std::mutex mutex_;
  Error error_;  // guarded by mutex_ (but see reset())
  // Written before the request is queued, read by the waiter. Its memory is kept
  // across the state's reuses, and copied into without std::string's general
  // assignment (every push pays it while step accounting is on).
  std::unique_ptr<char[]> name_;
  size_t name_size_ = 0;
  size_t name_capacity_ = 0;
};

class HandleTable;

// A pinned state: its slot is not reused while a HandleRef to it exists.
class HandleRef {
 public:
  HandleRef() = default;
  HandleRef(HandleTable* table, uint32_t slot, HandleState* state)
      : table_(table), slot_(slot), state_(state) {}
  HandleRef(HandleRef&& other) noexcept { *this = std::move(other); }
  HandleRef& operator=(HandleRef&& other) noexcept;
  HandleRef(const HandleRef&) = delete;
  HandleRef& operator=(const HandleRef&) = delete;
  ~HandleRef() { reset(); }

  explicit operator bool() const { return state_ != nullptr; }
  HandleState* operator->() const { return state_; }
  HandleState* get() const { return state_; }
  void reset();

 private:
  HandleTable* table_ = nullptr;
  uint32_t slot_ = 0;
  HandleState* state_ = nullptr;
};

class HandleTable {
 public:
  // A new handle for an operation of `parts` parts; *state is where the background
  // thread completes it (valid until the handle is waited for).
  hvd_handle_t add(int parts, HandleState** state);
  // The state of a live handle, pinned; empty for an unknown handle.
  HandleRef find(hvd_handle_t handle);
  // As find, and retires the handle: later finds and takes of it fail. The slot is
  // reused once the returned reference (and any other) is released.
  HandleRef take(hvd_handle_t handle);
  // Live handles (issued and not yet taken).
  size_t size();

 private:
  friend class HandleRef;
  struct Slot {
    std::unique_ptr<HandleState> state;  // stays in place while slots_ grows
    uint32_t generation = 0;
    bool live = false;  // issued and not taken
    int pins = 0;
  };
  HandleRef pin_locked(hvd_handle_t handle);
  void unpin(uint32_t slot);

  SpinLock lock_;  // every call takes it, for a few instructions
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

}  // namespace hvd
