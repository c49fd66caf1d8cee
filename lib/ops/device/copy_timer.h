// The GPU time of the fusion copies, for step accounting (copy_seconds): a pair of
// timing events around each batched copy on the library's stream, read once the
// batch's work has finished. The host path times its copies on the CPU; a device
// copy is queued, so only the GPU's clock knows how long it ran.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hvd {

class CopyTimer {
 public:
  explicit CopyTimer(void* stream);  // the library's cudaStream_t
  ~CopyTimer();
  CopyTimer(const CopyTimer&) = delete;
  CopyTimer& operator=(const CopyTimer&) = delete;

  // Off by default: step accounting turns it on. Turning it off drops pairs not taken.
  void enable(bool on);
  bool enabled() const { return on_; }

  // Around one copy's launch. Best effort: an event that cannot be made or recorded
  // leaves that copy untimed; the copy itself is not affected.
  void start();
  void stop();

  // Nanoseconds between each start and its stop, summed, for the pairs recorded since
  // the last call; call after the stream's work up to the last stop has finished.
  int64_t take_ns();

 private:
  bool pair_ready(size_t index);

  void* stream_;
  bool on_ = false;
  bool open_ = false;  // start() recorded, stop() not yet
  std::vector<void*> starts_, stops_;  // cudaEvent_t, reused from step to step
  size_t used_ = 0;
};

}  // namespace hvd
