// How hvdrun learns which rank failed first. MPI launchers report the exit of the
// process they started, and after one rank fails they kill the others, so their
// summary often names a rank that was only killed in the cleanup (MPICH: "rank 0
// ... KILLED BY SIGNAL: 9" after rank 1 exited with status 3). hvdrun therefore starts
// each rank under a small monitor (rank_monitor.h) that waits for it and, when it
// fails, writes one marker line to stderr. The launcher carries stderr back to
// hvdrun from every node, with MPICH and Open MPI alike; hvdrun takes the marker
// lines out of the output it relays and names the earliest failure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace hvdrun {

// What the monitor knew of the rank's MPI when it exited (marker field mpi=).
enum class RankMpi {
  Unknown,  // "unknown": the monitor could not tell (no notice pipe, no pidfd)
  None,     // "none": it never began hvd_init (libhvd's notice did not come)
  Hvd,      // "hvd": it began hvd_init (libhvd's "init" notice came)
};

struct RankExit {
  int rank = -1;        // -1: the launcher did not say
  int exit_code = 0;    // when signal == 0
  int signal = 0;       // killed by this signal
  double time = 0;      // seconds since the epoch, when the monitor saw the exit
  long pid = 0;
  std::string host;
  RankMpi mpi = RankMpi::Unknown;
  // Set by JobWatch: it exited with status 0 before starting MPI while other ranks had
  // started it, and they would wait for it in MPI_Init for ever.
  bool left_peers_waiting = false;

  bool failed() const { return signal != 0 || exit_code != 0 || left_peers_waiting; }
  // The status a shell reports for it: the exit code, or 128 + the signal; 1 for a
  // rank that left its peers waiting (its own status was 0).
  int shell_status() const {
    return signal ? 128 + signal : exit_code ? exit_code : left_peers_waiting ? 1 : 0;
  }
};

// Starts every marker; the first byte (ASCII record separator) never begins a line
// of ordinary output.
inline constexpr std::string_view kRankExitMarker = "\x1ehvdrun:rank-exit ";
// The monitor's note that its rank began hvd_init (libhvd's "init" notice, written
// before MPI_Init): from then on it waits in MPI's initialization for every other
// rank. Fields: rank= pid= host=.
inline constexpr std::string_view kRankMpiMarker = "\x1ehvdrun:rank-mpi ";
// The monitor's word that its rank still runs, every kRankAliveSeconds while it does
// (stderr only, between the rank's lines). Fields: rank=.
inline constexpr std::string_view kRankAliveMarker = "\x1ehvdrun:rank-alive ";
inline constexpr double kRankAliveSeconds = 5;
// All start with this.
inline constexpr std::string_view kMarkerStart = "\x1ehvdrun:";

// The marker line for an exit, newline included.
std::string format_rank_exit(const RankExit& exit);
// Parses the text after kRankExitMarker up to (not including) the newline.
std::optional<RankExit> parse_rank_exit(std::string_view fields);
// "rank 1 (pid 123 on node2) exited with status 3" / "... was killed by signal 9 (SIGKILL)"
std::string describe_rank_exit(const RankExit& exit);

// The length of the rank prefix a launcher put at the start of text ("[3] " from
// Hydra's -prepend-rank, "[1,3]<stderr>:" from Open MPI's --tag-output); 0 if there is
// none. *incomplete: text ends where a prefix may still be going on.
size_t rank_prefix_length(std::string_view text, bool* incomplete);

// What the monitors have said about a job's ranks, and the failure that ends it: the
// earliest failed exit, or a rank that exited with status 0 without beginning
// hvd_init (RankMpi::None) while another rank that began it still runs. That one waits
// in MPI's initialization for ever (MPICH and Open MPI alike), so the early exit is a
// failure. A rank that exits after hvd_init never ends the job (its peers may still be
// finishing), and neither does any exit in a job where no rank began hvd_init (a
// script's --help, a program without libhvd).
class JobWatch {
 public:
  // One marker line, from kMarkerStart on, newline excluded. Others are ignored.
  void take_marker(std::string_view line);
  void rank_exited(const RankExit& exit);
  void rank_began_init(int rank);
  const std::optional<RankExit>& first_failure() const { return first_; }
  // Every failed exit reported, earliest first.
  const std::vector<RankExit>& failures() const { return failures_; }
  // The ranks whose monitors reported their exit.
  const std::set<int>& exited() const { return exited_; }
  // True once, when a failure has just been seen for the first time.
  bool take_new_failure();
  // Ranks 0..num_proc-1 that have not exited and whose monitors have said nothing
  // since `since` (seconds of now_seconds's clock), while other ranks did exit: their
  // node no longer reaches the launcher. Empty until a rank-alive marker came (the
  // monitors send them only to stderr).
  std::vector<int> silent_since(double since, int64_t num_proc) const;
  // The clock of silent_since (steady, seconds); settable for tests.
  double (*now_seconds)() = nullptr;

 private:
  void heard(int rank);
  void failure(const RankExit& exit);
  void check_early_exit();
  std::optional<RankExit> first_;
  std::vector<RankExit> failures_;
  bool new_failure_ = false;
  std::optional<RankExit> early_;  // the first clean exit before MPI
  std::set<int> initializing_, exited_;
  std::map<int, double> heard_;  // rank: when its monitor last said anything
  double started_ = -1;          // the first word from any monitor
  bool alive_markers_ = false;
};

// Copies a job's stderr to hvdrun's own, taking marker lines out (with the rank
// prefix the launcher put before them) and passing them to a JobWatch. Output is
// passed on as it arrives (progress bars included); only bytes that may be the start
// of a prefix or a marker are held until their line ends.
class StderrRelay {
 public:
  // Returns the text to print now; a parsed marker updates first_failure().
  std::string feed(std::string_view chunk);
  // At the end of the stream: whatever is still held.
  std::string finish();
  const std::optional<RankExit>& first_failure() const { return watch_.first_failure(); }
  // True once, when a failure has just been seen for the first time.
  bool take_new_failure() { return watch_.take_new_failure(); }
  JobWatch& watch() { return watch_; }

 private:
  std::string held_;  // a possible prefix or marker, until its newline
  bool line_start_ = true;  // the last byte passed on ended a line
  JobWatch watch_;
};

}  // namespace hvdrun
