// The operation watchdog (HVD_OP_TIMEOUT_SECONDS): a thread that ends the job when
// the collective in flight has stopped making progress for longer than the timeout.
// "In flight" means every rank has submitted the tensors and the background thread is
// inside the MPI or NCCL calls (or a negotiation round), which no error will ever end
// when a peer is stopped, its node lost or its link down: MPI has no timeout of its own.
// "Progress" is a chunk, piece or ring step completed (base/op_progress.h): a slow link
// that still moves data is never taken for a dead one. A single MPI call (one chunk,
// or one round of an allgather's, alltoall's or reduce-scatter's chunks) reports only
// when it returns.
//
// The background thread brackets each batch (and each negotiation round) with
// begin()/end(); the watchdog thread wakes about every second. An operation in flight
// longer than the stall warning time (HOROVOD_STALL_CHECK_TIME_SECONDS) is warned about
// then and at each such interval after; one that moved nothing for the timeout gets
// one line
//
//   libhvd: watchdog: rank R: <op> of tensor(s) ... on process set S made no progress
//   for T s (HVD_OP_TIMEOUT_SECONDS=T) ...
//
// then the watchdog aborts the device communicators (NCCL's comm abort) and calls
// MPI_Abort, which makes the launcher end every rank (ranks later in the set call it a
// little later, so that one abort usually ends the job). A backstop _exit follows if
// the abort itself hangs. begin()/end() take an uncontended lock: the description is
// built only when the watchdog speaks, from the batch that is still in flight then.
//
// A rank outside a process set takes no part in its operations, but its next
// negotiation round waits for the set's ranks to come out of them. Such a round is
// never ended by this rank: the set's own ranks watch their operation's progress, and
// their abort ends this rank too.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "execute/fusion_planner.h"
#include "queue/response.h"

namespace hvd {

class ProcessSetTable;

// The exit status of a job the watchdog ends (a timeout, as timeout(1) reports it).
constexpr int kWatchdogExitStatus = 124;

class OpWatchdog {
 public:
  // timeout_s <= 0: never ends the job; warn_s <= 0: no warnings; both: off (no
  // thread; begin/end do nothing). abort_device is called on the watchdog thread
  // before MPI_Abort (may be empty); describe_pending, there too (for the line and
  // each warning), names the tensors a negotiation round is for. Both run while the
  // background thread is held inside the bracket, so they may read its state.
  OpWatchdog(double timeout_s, double warn_s, int world_rank, const ProcessSetTable* sets,
             std::function<void()> abort_device, std::function<std::string()> describe_pending);
  ~OpWatchdog();
  OpWatchdog(const OpWatchdog&) = delete;
  OpWatchdog& operator=(const OpWatchdog&) = delete;

  bool enabled() const { return timeout_s_ > 0 || warn_s_ > 0; }
  // A batch of responses (indices into *responses) goes into its collective. Both
  // stay alive and unchanged until end().
  void begin(const Batch* batch, const std::vector<Response>* responses);
  // A negotiation round: every rank's background thread must take part.
  void begin_negotiation();
  void end();
  // The batch now dispatched runs on a process set this rank is not in: the next
  // negotiation round waits for that set's ranks to finish it.
  void note_elsewhere(const Batch* batch, const std::vector<Response>* responses);

  // What an operation looked like to the watchdog when it spoke (exposed for tests).
  struct Seen {
    double elapsed_s = 0;          // since it began
    double still_s = 0;            // since the last progress (or its start)
    int64_t ticks = 0;             // chunks, pieces or steps done
    int64_t bytes_done = 0;
    std::string waiting_on_sets;   // negotiation only: other sets' ops its peers are in
  };

  // The line the watchdog prints when it ends the job, and its warning while an
  // operation lasts (exposed for tests).
  static std::string describe(int world_rank, double timeout_s, const Seen& seen,
                              const Batch* batch, const std::vector<Response>* responses,
                              const std::vector<int>& set_ranks, const std::string& pending);
  static std::string describe_in_flight(double timeout_s, const Seen& seen, const Batch* batch,
                                        const std::vector<Response>* responses,
                                        const std::vector<int>& set_ranks,
                                        const std::string& pending);

 private:
  void run();
  Seen look(double now) const;
  std::vector<int> set_ranks(size_t* place) const;
  void warn(const Seen& seen);
  [[noreturn]] void fire(const Seen& seen);

  const double timeout_s_;
  const double warn_s_;
  const int world_rank_;
  const ProcessSetTable* sets_;
  std::function<void()> abort_device_;
  std::function<std::string()> describe_pending_;

  std::mutex mutex_;
  std::condition_variable wake_;  // only for stopping
  bool stop_ = false;
  bool active_ = false;
  double started_ = 0;
  double last_warning_ = 0;
  const Batch* batch_ = nullptr;                   // nullptr: a negotiation round
  const std::vector<Response>* responses_ = nullptr;
  // Other sets' batches dispatched since the last negotiation round ended, described
  // when noted (the responses are gone by the time the round waits).
  std::string elsewhere_;
  std::thread thread_;
};

}  // namespace hvd
