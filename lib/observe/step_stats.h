// Step accounting: where each training step's time goes, and how much of it was
// communication the framework could not hide (DESIGN.md, "Step accounting").
//
// Everything is a cumulative counter, added to with relaxed atomics by the thread
// that measured it: user threads add the time they were blocked in a wait that did
// not find its handle done (the exposed communication), the background thread adds
// negotiation, fusion-copy and transfer time and the bytes it moved, and, where the
// summary was asked for, how long each transfer waited for the last rank to enter it
// (peer wait: see BackgroundLoop::run_batches). A step boundary
// (a tensor name executed twice, or hvd_mark_step) takes the differences since the
// previous boundary under a mutex, once per step. The hot paths therefore cost a clock
// read at the start and end of a blocking wait and of each round and batch.
//
// Process-wide rather than per runtime: handles outlive the runtime (a handle failed
// by shutdown can be waited for later), and the figures of a finished run stay
// readable after hvd_shutdown, with the raw-MPI reference measured there.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hvd {

// One rank's sums over its measured steps.
struct StepTotals {
  int64_t steps = 0;
  double step_s = 0;
  double wait_s = 0;
  double negotiate_s = 0;
  double copy_s = 0;
  double transfer_s = 0;   // peer wait excluded
  double peer_wait_s = 0;  // waiting for the last rank to enter a transfer
  int64_t bytes = 0;
  double bus_bytes = 0;  // bytes weighted as nccl-tests' busbw (allreduce: 2(n-1)/n)
};

struct TensorWait {
  std::string name;
  double wait_s = 0;  // summed over measured steps
};

class StepStats {
 public:
  // A new run (hvd_init): clears every figure. warmup: recorded steps left out.
  void start(bool enabled, int64_t warmup);
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // A wait on the handle of tensor `name` was blocked for ns (any thread).
  void add_wait(std::string_view name, int64_t ns);
  // Background thread.
  void add_negotiate(int64_t ns) { negotiate_ns_.fetch_add(ns, std::memory_order_relaxed); }
  // Bytes are added before the batch runs: its completion may wake a thread that
  // marks the step's end at once, and the bytes belong to the step that waited.
  void add_bytes(int64_t bytes, int64_t bus_bytes) {
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
    bus_bytes_.fetch_add(bus_bytes, std::memory_order_relaxed);
  }
  void add_execute(int64_t copy_ns, int64_t transfer_ns, int64_t peer_wait_ns = 0) {
    copy_ns_.fetch_add(copy_ns, std::memory_order_relaxed);
    transfer_ns_.fetch_add(transfer_ns, std::memory_order_relaxed);
    peer_wait_ns_.fetch_add(peer_wait_ns, std::memory_order_relaxed);
  }

  // A step boundary at monotonic time t (seconds). Detected boundaries (mark ==
  // false) are ignored once any mark was made: explicit marks take over. True when a
  // measured step ended there, with its wall time and exposed wait.
  bool boundary(double t, bool mark, double* step_s, double* wait_s);

  StepTotals totals() const;
  // The sums over the first `steps` measured steps only: a rank that measured more
  // steps than the job agreed on leaves its last ones out (as many as it still holds;
  // kKeptSteps), so every rank's figures cover the same count.
  StepTotals totals_of_first(int64_t steps) const;
  // The names waited on longest over the measured steps, longest first.
  std::vector<TensorWait> top_tensors(size_t n) const;
  // Raw MPI's bus bandwidth on this job's communicator (bytes/s; 0: not measured).
  void set_reference_bus_bandwidth(double bw) { reference_bw_.store(bw); }
  double reference_bus_bandwidth() const { return reference_bw_.load(); }
  // Whether a run was ever started in this process (hvd_get_step_stats before any
  // hvd_init is HVD_ERR_NOT_INITIALIZED).
  bool ever_started() const { return ever_started_.load(); }
  int64_t warmup() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return warmup_;
  }

 private:
  struct Counters {
    int64_t wait_ns = 0, negotiate_ns = 0, copy_ns = 0, transfer_ns = 0, peer_wait_ns = 0,
            bytes = 0, bus_bytes = 0;
  };
  Counters read_counters() const;

  // Distinct names kept for the top-tensor table: automatic names ("noname.<n>") are
  // new on every call and must not grow it without bound.
  static constexpr size_t kMaxNames = 4096;
  // The last measured steps, one StepTotals each (steps = 1): ranks disagree by a step
  // or two at most, where one rank's boundary fell before shutdown and another's after.
  static constexpr size_t kKeptSteps = 8;

  std::atomic<bool> enabled_{false};
  std::atomic<bool> ever_started_{false};
  std::atomic<bool> measuring_{false};  // warm-up is over: waits are kept by name
  std::atomic<int64_t> wait_ns_{0}, negotiate_ns_{0}, copy_ns_{0}, transfer_ns_{0},
      peer_wait_ns_{0}, bytes_{0}, bus_bytes_{0};
  std::atomic<double> reference_bw_{0};

  mutable std::mutex mutex_;  // everything below
  int64_t warmup_ = 1;
  bool marked_ = false;
  bool have_start_ = false;
  double start_t_ = 0;
  Counters at_start_;
  int64_t recorded_ = 0;  // steps ended, warm-up included
  StepTotals totals_;
  StepTotals last_[kKeptSteps];  // ring: measured step k at last_[k % kKeptSteps]
  std::unordered_map<std::string, int64_t> waits_by_name_;  // ns
};

StepStats& step_stats();

}  // namespace hvd
