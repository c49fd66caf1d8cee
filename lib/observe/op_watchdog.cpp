#include "observe/op_watchdog.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <mpi.h>

#include "base/log.h"
#include "base/op_progress.h"
#include "queue/process_sets.h"
#include "queue/request.h"

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

// "allreduce of tensor 'a' (N bytes)", "negotiation round for ..."
std::string what_text(const Batch* batch, const std::vector<Response>* responses,
                      const std::string& pending) {
  if (!batch || !responses || batch->items.empty())
    return "negotiation round" + (pending.empty() ? std::string() : " for " + pending) +
           " (every rank's background thread must take part)";
  const Response& first = (*responses)[batch->items[0]];
  std::string what = std::string(op_type_name(first.spec.op)) + " of " +
                     (batch->items.size() == 1 ? "tensor "
                                               : std::to_string(batch->items.size()) + " tensors ");
  for (size_t i = 0; i < batch->items.size() && i < kMaxNamesListed; ++i)
    what += (i ? ", '" : "'") + (*responses)[batch->items[i]].name + "'";
  if (batch->items.size() > kMaxNamesListed) what += ", ...";
  what += " (" + std::to_string(batch->bytes) + " bytes";
  if (first.spec.device != -1) what += ", device " + std::to_string(first.spec.device);
  return what + ")";
}

int32_t set_of(const Batch* batch, const std::vector<Response>* responses) {
  return batch && responses && !batch->items.empty() ? (*responses)[batch->items[0]].spec.process_set
                                                     : 0;
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

OpWatchdog::OpWatchdog(double timeout_s, double warn_s, int world_rank, const ProcessSetTable* sets,
                       std::function<void()> abort_device,
                       std::function<std::string()> describe_pending)
    : timeout_s_(timeout_s),
      warn_s_(warn_s),
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
  const int64_t now_ns = monotonic_ns();
  OpProgress& progress = op_progress();
  progress.bytes.store(0, std::memory_order_relaxed);
  progress.ticks.store(0, std::memory_order_relaxed);
  progress.last_ns.store(now_ns, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  active_ = true;
  started_ = static_cast<double>(now_ns) * 1e-9;
  last_warning_ = 0;
  batch_ = batch;
  responses_ = responses;
}

void OpWatchdog::begin_negotiation() { begin(nullptr, nullptr); }

void OpWatchdog::end() {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  // A round that ended had every rank in it: no set's operation holds it any more.
  if (!batch_) elsewhere_.clear();
  active_ = false;
}

void OpWatchdog::note_elsewhere(const Batch* batch, const std::vector<Response>* responses) {
  if (!enabled() || !batch || batch->items.empty()) return;
  const int32_t set_id = set_of(batch, responses);
  std::string ranks;
  if (auto set = sets_ ? sets_->find(set_id) : nullptr) ranks = " (ranks " + ranks_text(set->ranks) + ")";
  std::lock_guard<std::mutex> lock(mutex_);
  if (elsewhere_.size() > 512) return;  // enough to say who it waits on
  elsewhere_ += (elsewhere_.empty() ? "" : "; ") + what_text(batch, responses, "") +
                " on process set " + std::to_string(set_id) + ranks;
}

OpWatchdog::Seen OpWatchdog::look(double now) const {
  const OpProgress& progress = op_progress();
  Seen seen;
  seen.elapsed_s = now - started_;
  const double last = static_cast<double>(progress.last_ns.load(std::memory_order_relaxed)) * 1e-9;
  seen.still_s = now - std::max(started_, last);
  seen.ticks = progress.ticks.load(std::memory_order_relaxed);
  seen.bytes_done = progress.bytes.load(std::memory_order_relaxed);
  if (batch_) seen.bytes_done = std::min<int64_t>(seen.bytes_done, batch_->bytes);
  if (!batch_) seen.waiting_on_sets = elsewhere_;
  return seen;
}

std::vector<int> OpWatchdog::set_ranks(size_t* place) const {
  if (auto set = sets_ ? sets_->find(set_of(batch_, responses_)) : nullptr) {
    if (place) *place = static_cast<size_t>(std::max(set->my_set_rank, 0));
    return set->ranks;
  }
  return {};
}

namespace {

// What moved last: "4194304 of 1073741824 bytes done, the last 3.2 s ago".
std::string progress_text(const OpWatchdog::Seen& seen, const Batch* batch) {
  if (!batch) return "";
  if (seen.ticks == 0)
    return "nothing of it completed yet (a single MPI call, or the first chunk, reports "
           "progress only when it returns)";
  return std::to_string(seen.bytes_done) + " of " + std::to_string(batch->bytes) +
         " bytes done in " + std::to_string(seen.ticks) + " chunk(s), the last " +
         format_seconds(seen.still_s) + " s ago";
}

}  // namespace

std::string OpWatchdog::describe(int world_rank, double timeout_s, const Seen& seen,
                                 const Batch* batch, const std::vector<Response>* responses,
                                 const std::vector<int>& set_ranks, const std::string& pending) {
  const std::string moved = progress_text(seen, batch);
  return "libhvd: watchdog: rank " + std::to_string(world_rank) + ": " +
         what_text(batch, responses, pending) + " on process set " +
         std::to_string(set_of(batch, responses)) + " made no progress for " +
         format_seconds(seen.still_s) + " s (HVD_OP_TIMEOUT_SECONDS=" + format_seconds(timeout_s) +
         "), in flight for " + format_seconds(seen.elapsed_s) + " s" +
         (moved.empty() ? "" : ": " + moved) + "; it waits on ranks " + ranks_text(set_ranks) +
         ", one of which is stopped, dead or unreachable (MPI does not say which); ending the "
         "job with MPI_Abort";
}

std::string OpWatchdog::describe_in_flight(double timeout_s, const Seen& seen, const Batch* batch,
                                           const std::vector<Response>* responses,
                                           const std::vector<int>& set_ranks,
                                           const std::string& pending) {
  const std::string moved = progress_text(seen, batch);
  std::string line = what_text(batch, responses, pending) + " on process set " +
                     std::to_string(set_of(batch, responses)) + " (ranks " + ranks_text(set_ranks) +
                     ") has been in flight for " + format_seconds(seen.elapsed_s) + " s" +
                     (moved.empty() ? "" : ": " + moved);
  if (!seen.waiting_on_sets.empty())
    return line + "; it waits for ranks busy in " + seen.waiting_on_sets +
           ", whose own watchdog ends the job if that stops moving";
  if (timeout_s <= 0) return line + "; the watchdog is off (HVD_OP_TIMEOUT_SECONDS=0)";
  const double left = std::max(0.0, timeout_s - seen.still_s);
  return line + "; the watchdog ends the job if nothing moves for " + format_seconds(timeout_s) +
         " s (HVD_OP_TIMEOUT_SECONDS), in " + format_seconds(left) + " s at the earliest";
}

void OpWatchdog::warn(const Seen& seen) {
  const bool negotiating = !batch_ || !responses_;
  const std::string pending = negotiating && describe_pending_ ? describe_pending_() : "";
  const std::string line =
      describe_in_flight(timeout_s_, seen, batch_, responses_, set_ranks(nullptr), pending);
  HVD_LOG(Warning, "%s", line.c_str());
}

void OpWatchdog::run() {
  pthread_setname_np(pthread_self(), "hvd-watchdog");
  // Checking once a second (or more often for short times) bounds the lateness.
  double shortest = timeout_s_ > 0 ? timeout_s_ : warn_s_;
  if (warn_s_ > 0) shortest = std::min(shortest, warn_s_);
  const auto period = std::chrono::duration<double>(std::min(1.0, shortest / 4));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, period);
    if (stop_ || !active_) continue;
    const double now = now_seconds();
    const Seen seen = look(now);
    // A round that waits on another set's ranks is theirs to end (see the header).
    const bool others_decide = !batch_ && !elsewhere_.empty();
    if (timeout_s_ > 0 && seen.still_s >= timeout_s_ && !others_decide)
      fire(seen);  // with the lock held: the op stays put
    if (warn_s_ > 0 && seen.elapsed_s >= warn_s_ &&
        (last_warning_ == 0 || now - last_warning_ >= warn_s_)) {
      warn(seen);
      last_warning_ = now;
    }
  }
}

void OpWatchdog::fire(const Seen& seen) {
  // If the abort hangs (the launcher is unreachable), the process still ends.
  std::thread([] {
    sleep(kAbortGraceSeconds);
    _exit(kWatchdogExitStatus);
  }).detach();
  size_t place = 0;  // this rank's in the set, for the abort's stagger
  const std::vector<int> ranks = set_ranks(&place);
  const bool negotiating = !batch_ || !responses_;
  const std::string pending = negotiating && describe_pending_ ? describe_pending_() : "";
  std::string line = describe(world_rank_, timeout_s_, seen, batch_, responses_, ranks, pending) + "\n";
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
