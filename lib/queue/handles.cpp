#include "queue/handles.h"

#include <chrono>
#include <thread>


namespace hvd {

namespace {

// Handle values: generation in the high 32 bits, slot + 1 in the low 32, so 0 and
// negative values are never issued.
hvd_handle_t encode_handle(uint32_t slot, uint32_t generation) {
  return static_cast<hvd_handle_t>((static_cast<uint64_t>(generation & 0x7fffffffu) << 32) |
                                   (static_cast<uint64_t>(slot) + 1));
}

}  // namespace

void HandleState::reset(int parts) {
  queued_.store(false, std::memory_order_relaxed);
  remaining_.store(parts, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  has_error_.store(false, std::memory_order_relaxed);
  // The slot is this thread's alone now: the table's lock ordered the last user's
  // accesses before this, so mutex_ is not needed (a lock per tensor was a measurable
  // share of a small tensor's cost), and only what was set needs clearing.
  if (waiter_) waiter_ = nullptr;
  if (!error_.ok()) error_ = Error::success();
}

void HandleState::complete(const Error& result) {
  if (!result.ok()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.ok()) error_ = result;
    has_error_.store(true, std::memory_order_relaxed);  // published by done_ below
  }
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    done_.store(1, std::memory_order_release);
    // The waiter may return and its slot be reused before this wake-up: states are
    // never freed while the table exists, so at worst another waiter wakes early and
    // sleeps again.
    done_.notify_all();
  }
}

void HandleState::wait(int64_t spin_us, int64_t* blocked_ns) const {
  if (blocked_ns) *blocked_ns = 0;
  if (done()) return;
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + std::chrono::microseconds(spin_us);
  // Yield while polling: the thread that completes the handle (the background thread,
  // or a peer rank's) may be queued on this core, and with as many ranks as cores it
  // usually is; a plain spin would hold it off for the whole spin.
  bool finished = false;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) {
      finished = true;
      break;
    }
    std::this_thread::yield();
  }
  if (!finished)
    while (!done()) done_.wait(0, std::memory_order_acquire);
  if (blocked_ns) {
    const auto waited = std::chrono::steady_clock::now() - start;
    *blocked_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count();
  }
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
  // Read after done(): the error, if any, was written before done_ was released.
  if (!has_error_.load(std::memory_order_acquire)) return Error::success();
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

HandleRef& HandleRef::operator=(HandleRef&& other) noexcept {
  if (this != &other) {
    reset();
    table_ = other.table_;
    slot_ = other.slot_;
    state_ = other.state_;
    other.table_ = nullptr;
    other.state_ = nullptr;
  }
  return *this;
}

void HandleRef::reset() {
  if (state_) table_->unpin(slot_);
  table_ = nullptr;
  state_ = nullptr;
}

hvd_handle_t HandleTable::add(int parts, HandleState** state) {
  std::lock_guard<SpinLock> guard(lock_);
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
    slots_.back().state = std::make_unique<HandleState>();
  }
  Slot& s = slots_[slot];
  s.live = true;
  s.state->reset(parts);
  ++live_;
  *state = s.state.get();
  return encode_handle(slot, s.generation);
}

HandleRef HandleTable::pin_locked(hvd_handle_t handle) {
  if (handle <= 0) return {};
  const uint64_t value = static_cast<uint64_t>(handle);
  const uint64_t index = (value & 0xffffffffu);
  if (index == 0 || index > slots_.size()) return {};
  const uint32_t slot = static_cast<uint32_t>(index - 1);
  Slot& s = slots_[slot];
  if (!s.live || (s.generation & 0x7fffffffu) != (value >> 32)) return {};
  ++s.pins;
  return HandleRef(this, slot, s.state.get());
}

HandleRef HandleTable::find(hvd_handle_t handle) {
  std::lock_guard<SpinLock> guard(lock_);
  return pin_locked(handle);
}

HandleRef HandleTable::take(hvd_handle_t handle) {
  std::lock_guard<SpinLock> guard(lock_);
  HandleRef ref = pin_locked(handle);
  if (ref) {
    Slot& s = slots_[static_cast<size_t>((static_cast<uint64_t>(handle) & 0xffffffffu) - 1)];
    s.live = false;
    ++s.generation;  // the old handle value is unknown from now on
    --live_;
  }
  return ref;
}

void HandleTable::unpin(uint32_t slot) {
  std::lock_guard<SpinLock> guard(lock_);
  Slot& s = slots_[slot];
  if (--s.pins == 0 && !s.live) free_.push_back(slot);
}

size_t HandleTable::size() {
  std::lock_guard<SpinLock> guard(lock_);
  return live_;
}

}  // namespace hvd
