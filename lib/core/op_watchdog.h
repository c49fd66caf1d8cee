// The operation watchdog (HVD_OP_TIMEOUT_SECONDS): a thread that ends the job when
// one collective has been in flight longer than the timeout. "In flight" means every
// rank has submitted the tensors and the background thread is inside the MPI or NCCL
// call (or a negotiation round), which no error will ever end when a peer is stopped,
// its node lost or its link down: MPI has no timeout of its own.
//
// The background thread brackets each batch (and each negotiation round) with
// begin()/end(); the watchdog thread wakes about every second, and when the same
// operation has been in flight too long it prints one line
//
//   libhvd: watchdog: rank R: <op> of tensor(s) ... has not finished after T s
//   (HVD_OP_TIMEOUT_SECONDS=T) ...
//
// aborts the device communicators (NCCL's comm abort), then calls MPI_Abort, which
// makes the launcher end every rank (ranks later in the set call it a little later,
// so that one abort usually ends the job). A backstop _exit follows if the abort
// itself hangs. begin()/end() take an uncontended lock: the description is built only when
// the watchdog fires, from the batch that is still in flight then.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/fusion_planner.h"
#include "core/response.h"

namespace hvd {

class ProcessSetTable;

// The exit status of a job the watchdog ends (a timeout, as timeout(1) reports it).
constexpr int kWatchdogExitStatus = 124;

class OpWatchdog {
 public:
  // timeout_s <= 0: off (no thread; begin/end do nothing). abort_device is called on
  // the watchdog thread before MPI_Abort (may be empty); describe_pending, there too,
  // names the tensors a stuck negotiation round was for. Both run while the
  // background thread is held inside the bracket, so they may read its state.
  OpWatchdog(double timeout_s, int world_rank, const ProcessSetTable* sets,
             std::function<void()> abort_device, std::function<std::string()> describe_pending);
  ~OpWatchdog();
  OpWatchdog(const OpWatchdog&) = delete;
  OpWatchdog& operator=(const OpWatchdog&) = delete;

  bool enabled() const { return timeout_s_ > 0; }
  // A batch of responses (indices into *responses) goes into its collective. Both
  // stay alive and unchanged until end().
  void begin(const Batch* batch, const std::vector<Response>* responses);
  // A negotiation round: every rank's background thread must take part.
  void begin_negotiation();
  void end();

  // The line the watchdog prints for an operation in flight for elapsed_s (exposed
  // for tests).
  static std::string describe(int world_rank, double timeout_s, double elapsed_s,
                              const Batch* batch, const std::vector<Response>* responses,
                              const std::vector<int>& set_ranks, const std::string& pending);

 private:
  void run();
  [[noreturn]] void fire(double elapsed_s);

  const double timeout_s_;
  const int world_rank_;
  const ProcessSetTable* sets_;
  std::function<void()> abort_device_;
  std::function<std::string()> describe_pending_;

  std::mutex mutex_;
  std::condition_variable wake_;  // only for stopping
  bool stop_ = false;
  bool active_ = false;
  double started_ = 0;
  const Batch* batch_ = nullptr;                   // nullptr: a negotiation round
  const std::vector<Response>* responses_ = nullptr;
  std::thread thread_;
};

}  // namespace hvd
