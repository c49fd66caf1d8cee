#include "core/op_watchdog.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <mpi.h>

#include "core/process_sets.h"
#include "core/request.h"

namespace hvd {

namespace {

// How long the abort may take before the process ends itself: MPI_Abort has to reach
// the launcher, which may be on a node that is gone.
constexpr int kAbortGraceSeconds = 10;
constexpr useconds_t kLineDrainMicroseconds = 500 * 1000;
// Every rank of a stuck collective times out within a few milliseconds of the others.
// Ranks later in the set wait this much longer per place before their own MPI_Abort,
// so that usually one abort ends the job: Open MPI's mpirun (4.1) has crashed with a
// segfault while relaying several ranks' simultaneous MPI_Abort messages, losing the
// job's exit status. A rank the first abort reaches is killed while it waits; the
// cap bounds the wait in large sets whose first ranks are the stuck ones.
constexpr useconds_t kAbortStaggerMicroseconds = 250 * 1000;
constexpr size_t kMaxStaggerPlaces = 8;
// Tensor names listed in the line; a fused batch may hold thousands.
constexpr size_t kMaxNamesListed = 8;

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::round(s * 10) / 10);
  return buf;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 16) return s + ", ... (" + std::to_string(ranks.size()) + " ranks)";
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  return s;
}

}  // namespace

OpWatchdog::OpWatchdog(double timeout_s, int world_rank, const ProcessSetTable* sets,
                       std::function<void()> abort_device,
                       std::function<std::string()> describe_pending)
    : timeout_s_(timeout_s),
      world_rank_(world_rank),
      sets_(sets),
      abort_device_(std::move(abort_device)),
      describe_pending_(std::move(describe_pending)) {
  if (enabled()) thread_ = std::thread([this] { run(); });
}

OpWatchdog::~OpWatchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void OpWatchdog::begin(const Batch* batch, const std::vector<Response>* responses) {
  if (!enabled()) return;
  const double now = now_seconds();
  std::lock_guard<std::mutex> lock(mutex_);
  active_ = true;
  started_ = now;
  batch_ = batch;
  responses_ = responses;
}

void OpWatchdog::begin_negotiation() { begin(nullptr, nullptr); }

void OpWatchdog::end() {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  active_ = false;
}

std::string OpWatchdog::describe(int world_rank, double timeout_s, double elapsed_s,
                                 const Batch* batch, const std::vector<Response>* responses,
                                 const std::vector<int>& set_ranks, const std::string& pending) {
  std::string what;
  int32_t set_id = 0;
  if (!batch || !responses || batch->items.empty()) {
    what = "negotiation round" + (pending.empty() ? std::string() : " for " + pending) +
           " (every rank's background thread must take part)";
  } else {
    const Response& first = (*responses)[batch->items[0]];
    set_id = first.spec.process_set;
    what = std::string(op_type_name(first.spec.op)) + " of " +
           (batch->items.size() == 1 ? "tensor " : std::to_string(batch->items.size()) + " tensors ");
    for (size_t i = 0; i < batch->items.size() && i < kMaxNamesListed; ++i)
      what += (i ? ", '" : "'") + (*responses)[batch->items[i]].name + "'";
    if (batch->items.size() > kMaxNamesListed) what += ", ...";
    what += " (" + std::to_string(batch->bytes) + " bytes";
    if (first.spec.device != -1) what += ", device " + std::to_string(first.spec.device);
    what += ")";
  }
  return "libhvd: watchdog: rank " + std::to_string(world_rank) + ": " + what +
         " on process set " + std::to_string(set_id) + " has not finished after " +
         format_seconds(elapsed_s) + " s (HVD_OP_TIMEOUT_SECONDS=" + format_seconds(timeout_s) +
         "); it waits on ranks " + ranks_text(set_ranks) +
         ", one of which is stopped, dead or unreachable (MPI does not say which); ending the "
         "job with MPI_Abort";
}

void OpWatchdog::run() {
  pthread_setname_np(pthread_self(), "hvd-watchdog");
  // Checking once a second (or more often for short timeouts) bounds the lateness.
  const auto period = std::chrono::duration<double>(std::min(1.0, timeout_s_ / 4));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, period);
    if (stop_ || !active_) continue;
    const double elapsed = now_seconds() - started_;
    if (elapsed >= timeout_s_) fire(elapsed);  // with the lock held: the op stays put
  }
}

void OpWatchdog::fire(double elapsed_s) {
  // If the abort hangs (the launcher is unreachable), the process still ends.
  std::thread([] {
    sleep(kAbortGraceSeconds);
    _exit(kWatchdogExitStatus);
  }).detach();
  std::vector<int> ranks;
  const int32_t set_id =
      batch_ && responses_ && !batch_->items.empty() ? (*responses_)[batch_->items[0]].spec.process_set : 0;
  size_t place = 0;  // this rank's in the set, for the abort's stagger
  if (auto set = sets_ ? sets_->find(set_id) : nullptr) {
    ranks = set->ranks;
    place = static_cast<size_t>(std::max(set->my_set_rank, 0));
  }
  const bool negotiating = !batch_ || !responses_;
  const std::string pending = negotiating && describe_pending_ ? describe_pending_() : "";
  std::string line =
      describe(world_rank_, timeout_s_, elapsed_s, batch_, responses_, ranks, pending) + "\n";
  // One write, so the line is not interleaved with other ranks' output.
  ssize_t written = write(STDERR_FILENO, line.data(), line.size());
  (void)written;
  if (abort_device_) abort_device_();
  // The launcher relays output through its proxies, which MPI_Abort kills: give the
  // line time to get through them first (measured: without it, sometimes lost).
  usleep(kLineDrainMicroseconds +
         kAbortStaggerMicroseconds * std::min(place, kMaxStaggerPlaces));
  MPI_Abort(MPI_COMM_WORLD, kWatchdogExitStatus);
  _exit(kWatchdogExitStatus);
}

}  // namespace hvd
