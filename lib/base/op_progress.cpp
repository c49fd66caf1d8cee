#include "base/op_progress.h"

#include <unistd.h>

#include <chrono>

namespace hvd {

OpProgress& op_progress() {
  static OpProgress progress;
  return progress;
}

void note_op_progress(int64_t bytes) {
  OpProgress& p = op_progress();
  p.bytes.fetch_add(bytes, std::memory_order_relaxed);
  p.ticks.fetch_add(1, std::memory_order_relaxed);
  p.last_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count(),
                  std::memory_order_relaxed);
  if (const int64_t delay = p.test_delay_us.load(std::memory_order_relaxed))
    usleep(static_cast<useconds_t>(delay));
}

}  // namespace hvd
