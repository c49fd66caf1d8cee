// Whole lines from a rank to its launcher. The launchers' rank prefixes (Hydra's
// -prepend-rank, Open MPI's --tag-output) are put before every chunk they read, not
// every line, so a line that reaches them in two writes is cut in two: "[0] text[0] "
// and a lone newline. Python writes text and newline apart whenever its output is
// unbuffered (PYTHONUNBUFFERED, as many container images set, or python -u): a plain
// print() then garbles a few lines in a hundred. The rank monitor therefore gives the
// rank a pipe (a pseudo-terminal where the launcher gave a terminal, so the rank
// buffers and colours as before) and passes on what the rank writes a line at a time,
// each write holding whole lines only. A line still unfinished after kPartialHoldMs
// is passed on as it is (a prompt, a progress bar that ends its lines with '\r' is
// passed on at each '\r').
#pragma once

#include <chrono>
#include <string>

namespace hvdrun {

class LineRelay {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kPartialHoldMs = 200;

  // The relay of the rank's stream whose launcher end is to_fd: *child_fd is what the
  // rank gets as that stream (the caller dup2()s it there after fork and closes it in
  // the monitor). A pseudo-terminal when to_fd is a terminal, else a pipe. Returns
  // false (nothing created) when neither can be made; the rank then writes to to_fd
  // itself.
  bool open_for(int to_fd, int* child_fd);
  ~LineRelay();

  // The end to poll for reading; -1 once the rank's end is closed everywhere.
  int fd() const { return from_fd_; }
  // Reads what is there and passes on the whole lines. Returns false at end of file
  // (every writer closed its end), and closes the relay's end; an unfinished last line
  // is still held (flush() or end_line() passes it on).
  bool pump();
  // Milliseconds until a held partial line is due (-1: none held).
  int ms_until_due(Clock::time_point now) const;
  // Passes on a held partial line that is due.
  void flush_due(Clock::time_point now);
  // Passes on what is held, line or not.
  void flush();
  // Ends the line the launcher's stream is in: what is held is passed on with a
  // newline in the same write (a newline written alone would be a chunk, and get a
  // prefix, of its own). A line of the monitor's own (a marker) then starts a line.
  void end_line();
  // Nothing held and the last byte passed on ended a line: a marker written now
  // breaks no line of the rank's.
  bool at_line_start() const { return held_.empty() && !mid_line_; }

 private:
  void pass_on(size_t bytes);
  int from_fd_ = -1;
  int to_fd_ = -1;
  std::string held_;
  Clock::time_point held_since_{};
  bool mid_line_ = false;  // the last byte passed on did not end a line
  bool broken_ = false;    // the launcher's end is gone: drop what comes
};

}  // namespace hvdrun
