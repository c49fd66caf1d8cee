#include "line_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace hvdrun {
namespace {

// A write of at most PIPE_BUF bytes reaches a pipe's reader whole: the launcher reads
// it as one chunk and prefixes it once. Longer runs of lines are cut at line ends.
constexpr size_t kWholeWrite = PIPE_BUF;
// A partial line is passed on once it holds this much, newline or not.
constexpr size_t kMaxHeld = 64 * 1024;
// Reads per pump: a rank that writes without pause still leaves the monitor time for
// its other duties.
constexpr int kReadsPerPump = 16;

bool ends_line(char c) { return c == '\n' || c == '\r'; }

// A pseudo-terminal whose rank end passes bytes through untouched (no "\r\n" for
// "\n", no echo), the size of the launcher's terminal. Returns the rank end, or -1.
int open_pseudo_terminal(int like_fd, int* relay_end) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return -1;
  char name[128];
  int rank_end = -1;
  if (::grantpt(master) == 0 && ::unlockpt(master) == 0 && ::ptsname_r(master, name, sizeof name) == 0)
    rank_end = ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (rank_end < 0) {
    ::close(master);
    return -1;
  }
  termios mode;
  if (::tcgetattr(rank_end, &mode) == 0) {
    ::cfmakeraw(&mode);
    ::tcsetattr(rank_end, TCSANOW, &mode);
  }
  winsize size;
  if (::ioctl(like_fd, TIOCGWINSZ, &size) == 0) ::ioctl(rank_end, TIOCSWINSZ, &size);
  *relay_end = master;
  return rank_end;
}

}  // namespace

bool LineRelay::open_for(int to_fd, int* child_fd) {
  int relay_end = -1, rank_end = -1;
  if (::isatty(to_fd)) rank_end = open_pseudo_terminal(to_fd, &relay_end);
  if (rank_end < 0) {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return false;
    relay_end = ends[0];
    rank_end = ends[1];
  }
  ::fcntl(relay_end, F_SETFL, ::fcntl(relay_end, F_GETFL) | O_NONBLOCK);
  from_fd_ = relay_end;
  to_fd_ = to_fd;
  *child_fd = rank_end;
  return true;
}

LineRelay::~LineRelay() {
  if (from_fd_ >= 0) ::close(from_fd_);
}

bool LineRelay::pump() {
  if (from_fd_ < 0) return false;
  char buf[64 * 1024];
  for (int reads = 0; reads < kReadsPerPump; ++reads) {
    const ssize_t n = ::read(from_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {  // end of file; a pseudo-terminal says EIO once its rank end is closed
      ::close(from_fd_);
      from_fd_ = -1;
      return false;
    }
    if (held_.empty()) held_since_ = Clock::now();
    held_.append(buf, static_cast<size_t>(n));
    size_t last = held_.find_last_of("\n\r");
    if (last != std::string::npos) {
      pass_on(last + 1);
      if (!held_.empty()) held_since_ = Clock::now();
    } else if (held_.size() >= kMaxHeld) {
      pass_on(held_.size());
    }
    if (from_fd_ < 0) return false;  // the launcher's end is gone
  }
  return true;
}

int LineRelay::ms_until_due(Clock::time_point now) const {
  if (held_.empty()) return -1;
  const auto due = held_since_ + std::chrono::milliseconds(kPartialHoldMs);
  if (due <= now) return 0;
  return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(due - now).count());
}

void LineRelay::flush_due(Clock::time_point now) {
  if (ms_until_due(now) == 0) pass_on(held_.size());
}

void LineRelay::flush() {
  if (!held_.empty()) pass_on(held_.size());
}

void LineRelay::end_line() {
  if (!held_.empty() || mid_line_) {
    held_.push_back('\n');
    pass_on(held_.size());
  }
}

void LineRelay::pass_on(size_t bytes) {
  size_t pos = 0;
  while (pos < bytes && !broken_) {
    size_t end = std::min(bytes, pos + kWholeWrite);
    if (end < bytes && !ends_line(held_[end - 1])) {
      // Cut after the last line end that fits; a line longer than a whole write goes
      // on to its own end.
      size_t cut = end;
      while (cut > pos && !ends_line(held_[cut - 1])) --cut;
      if (cut > pos) {
        end = cut;
      } else {
        while (end < bytes && !ends_line(held_[end - 1])) ++end;
      }
    }
    size_t done = pos;
    while (done < end) {
      const ssize_t n = ::write(to_fd_, held_.data() + done, end - done);
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd out{to_fd_, POLLOUT, 0};
        ::poll(&out, 1, -1);
      } else {
        // The launcher's end is gone: close ours, so that the rank's next write fails
        // as it would have without the relay.
        broken_ = true;
        if (from_fd_ >= 0) ::close(from_fd_);
        from_fd_ = -1;
        break;
      }
    }
    pos = end;
  }
  if (bytes > 0 && !broken_) mid_line_ = held_[bytes - 1] != '\n';
  held_.erase(0, bytes);
}

}  // namespace hvdrun
