#include "topo/run_delay.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace hvd {

int current_thread_id() {
  thread_local const int tid = static_cast<int>(syscall(SYS_gettid));
  return tid;
}

RunDelayReader::~RunDelayReader() {
  if (fd_ >= 0) close(fd_);
}

int64_t RunDelayReader::read(int tid) {
  if (tid <= 0) return -1;
  if (tid != tid_) {
    if (fd_ >= 0) close(fd_);
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    fd_ = open(path, O_RDONLY | O_CLOEXEC);
    tid_ = tid;
  }
  if (fd_ < 0) return -1;
  // Three numbers: time on a CPU, time waiting for one (ns), time slices.
  char text[96];
  const ssize_t n = pread(fd_, text, sizeof text - 1, 0);
  if (n <= 0) {  // the thread ended: its id may come back for another thread
    close(fd_);
    fd_ = -1;
    tid_ = 0;
    return -1;
  }
  text[n] = '\0';
  char* end = nullptr;
  std::strtoull(text, &end, 10);
  if (end == text) return -1;
  const char* second = end;
  const unsigned long long delay = std::strtoull(second, &end, 10);
  if (end == second) return -1;
  return static_cast<int64_t>(delay);
}

}  // namespace hvd
