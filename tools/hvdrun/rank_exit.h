// How hvdrun learns which rank failed first. MPI launchers report the exit of the
// process they started, and after one rank fails they kill the others, so their
// summary often names a rank that was only killed in the cleanup (MPICH: "rank 0
// ... KILLED BY SIGNAL: 9" after rank 1 exited with status 3). hvdrun therefore starts
// each rank under a small monitor (rank_monitor.h) that waits for it and, when it
// fails, writes one marker line to stderr. The launcher carries stderr back to
// hvdrun from every node, with MPICH and Open MPI alike; hvdrun takes the marker
// lines out of the output it relays and names the earliest failure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hvdrun {

struct RankExit {
  int rank = -1;        // -1: the launcher did not say
  int exit_code = 0;    // when signal == 0
  int signal = 0;       // killed by this signal
  double time = 0;      // seconds since the epoch, when the monitor saw the exit
  long pid = 0;
  std::string host;

  bool failed() const { return signal != 0 || exit_code != 0; }
  // The status a shell reports for it: the exit code, or 128 + the signal.
  int shell_status() const { return signal ? 128 + signal : exit_code; }
};

// Starts every marker; the first byte (ASCII record separator) never begins a line
// of ordinary output.
inline constexpr std::string_view kRankExitMarker = "\x1ehvdrun:rank-exit ";

// The marker line for an exit, newline included.
std::string format_rank_exit(const RankExit& exit);
// Parses the text after kRankExitMarker up to (not including) the newline.
std::optional<RankExit> parse_rank_exit(std::string_view fields);
// "rank 1 (pid 123 on node2) exited with status 3" / "... was killed by signal 9 (SIGKILL)"
std::string describe_rank_exit(const RankExit& exit);

// Copies a job's stderr to hvdrun's own, taking marker lines out and keeping the
// earliest failure. Output is passed on as it arrives (progress bars included); only
// bytes that may be the start of a marker are held until their line ends.
class StderrRelay {
 public:
  // Returns the text to print now; a parsed marker updates first_failure().
  std::string feed(std::string_view chunk);
  // At the end of the stream: whatever is still held.
  std::string finish();
  const std::optional<RankExit>& first_failure() const { return first_; }
  // True once, when a failure has just been seen for the first time.
  bool take_new_failure();

 private:
  void take_marker(std::string_view fields);
  std::string held_;  // a possible marker, until its newline
  std::optional<RankExit> first_;
  bool new_failure_ = false;
};

}  // namespace hvdrun
