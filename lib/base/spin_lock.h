// A lock for critical sections of a few instructions that every call takes (the handle
// table, the current runtime): an uncontended pthread mutex costs about 50 instructions
// a lock and unlock, this one two atomic operations. A waiter spins briefly, then
// yields its CPU, so that a holder preempted on an oversubscribed core (as many ranks
// as cores, each with a background thread) gets to finish. Not for sections that
// block, nor for waits on a condition (use std::mutex there).
#pragma once

#include <atomic>
#include <thread>

namespace hvd {

class SpinLock {
 public:
  void lock() noexcept {
    while (flag_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; flag_.load(std::memory_order_relaxed); ++spins) {
        if (spins < kSpinsBeforeYield) {
          pause();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  bool try_lock() noexcept { return !flag_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { flag_.store(false, std::memory_order_release); }

 private:
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();  // lets the sibling hyperthread run while this one spins
#endif
  }
  static constexpr int kSpinsBeforeYield = 64;
  std::atomic<bool> flag_{false};
};

}  // namespace hvd
