// How long a thread has waited for a CPU: the kernel's run delay, the time it was
// runnable but other threads held every CPU it may use. A thread on a CPU of its own
// has none; one sharing a CPU with busy threads has about as much as they ran.
#pragma once

#include <cstdint>

namespace hvd {

// The calling thread's id as the kernel knows it (gettid), cached per thread.
int current_thread_id();

// Reads the run delay of one thread of this process from /proc/self/task/TID/schedstat,
// keeping the file open between reads of the same thread (a read is a few
// microseconds; the kernel regenerates the file on each).
class RunDelayReader {
 public:
  RunDelayReader() = default;
  RunDelayReader(const RunDelayReader&) = delete;
  RunDelayReader& operator=(const RunDelayReader&) = delete;
  ~RunDelayReader();

  // Total run delay of thread tid since it started, in nanoseconds, or -1 where the
  // kernel does not report it (not Linux, no /proc for this process, no schedstat) or
  // the thread has ended.
  int64_t read(int tid);

 private:
  int fd_ = -1;
  int tid_ = 0;  // the thread fd_ reads; 0: none
};

}  // namespace hvd
