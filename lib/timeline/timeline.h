// The timeline: a Chrome-trace JSON file (chrome://tracing, Perfetto) of what happens
// to each tensor. Every tensor is a process row named after it; on that row the
// NEGOTIATE_<OP> phase runs from the first request to the decision, with an instant
// per rank when that rank's request is known, then the op phase (ALLREDUCE, ...) with
// its nested activities (QUEUE, MEMCPY_IN_FUSION_BUFFER, MPI_ALLREDUCE, ...). Row 0
// carries cycle marks and the traffic counters.
//
// Recording is cheap: an event is a small record appended to a buffer under a mutex
// that the writer thread holds only to swap buffers; the writer formats and writes
// the JSON at most every 100 ms, so the recording thread never waits on the disk.
// All methods are thread-safe; recording while stopped returns at once.
//
// A process-wide instance (a function-local static) completes its file at exit even
// without stop(). The runtime's hooks, per tensor name:
//   request known          negotiate_start(name, "ALLREDUCE")
//   rank r's request known negotiate_rank_ready(name, r)
//   decided                negotiate_end(name)          (or straight to op_start)
//   executing              op_start(name, "ALLREDUCE", bytes)
//     each stage           activity_start(names, "MEMCPY_IN_FUSION_BUFFER") ... activity_end(names)
//   completed              op_end(name, "OK" or the error's text)
// and per round mark_cycle(), per collective counters("traffic_bytes", local, cross,
// global).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "timeline/trace_event.h"
#include "timeline/trace_format.h"

namespace hvd {

class Timeline {
 public:
  Timeline() = default;
  ~Timeline();  // stops, completing the file
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Starts recording into a new file at path (base/atomic_file.h: what was there is
  // replaced, a planted link never followed); a timeline already running is
  // stopped first (its file completed). False with *error when the file cannot be
  // opened; the timeline is then stopped.
  bool start(const std::string& path, bool mark_cycles, std::string* error);
  // Ends the phases still open, writes what was recorded, closes the JSON array and
  // the file. Nothing when stopped. The timeline can be started again afterwards.
  void stop();
  // In the child of a fork(): the writer thread stayed with the parent and the file's
  // buffered bytes are the parent's. Drops both, so this process never writes to the
  // file (not even at exit, when stdio flushes every stream) nor joins the thread.
  void abandon_after_fork();
  // Blocks until everything recorded so far is in the file (which stays open).
  void flush();

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // Events recorded but not written because the writer fell too far behind.
  uint64_t dropped_events() const { return dropped_total_.load(std::memory_order_relaxed); }

  // op is the operation in capitals ("ALLREDUCE"): the phase is NEGOTIATE_ALLREDUCE.
  void negotiate_start(std::string_view name, std::string_view op);
  void negotiate_rank_ready(std::string_view name, int rank);
  void negotiate_end(std::string_view name);
  // Opens the op phase (closing negotiation if still open); bytes >= 0 is shown.
  void op_start(std::string_view name, std::string_view op_label, int64_t bytes = -1);
  // Activities nest inside the op phase; an end without a start is ignored.
  void activity_start(std::string_view name, std::string_view activity);
  void activity_end(std::string_view name);
  // The same for every tensor of a fused batch, under one lock.
  void activity_start(std::span<const std::string> names, std::string_view activity);
  void activity_end(std::span<const std::string> names);
  // Closes open activities and the op phase; a non-empty status is shown ("OK", or
  // the error's text), and the output's dtype and shape when given, as Horovod writes
  // them ("HOROVOD_FLOAT32", "[2, 3]").
  void op_end(std::string_view name, std::string_view status = {}, std::string_view dtype = {},
              std::string_view shape = {});
  // A CYCLE_START mark, when started with mark_cycles.
  void mark_cycle();
  // A counter sample (bytes moved within the node, across nodes, over all ranks).
  void counters(std::string_view name, int64_t local, int64_t cross, int64_t global);
  // A training step that just ended (step accounting): a "step_time_us" counter sample
  // at its end (events stay in time order), the exposed wait stacked under the rest of
  // the step; the value shown over a step is therefore the previous step's.
  void step_counter(int64_t step_ns, int64_t exposed_wait_ns);

 private:
  struct TensorState {
    int32_t pid = 0;
    int32_t open_activities = 0;
    bool negotiating = false;
    bool op_open = false;
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <class V>
  using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

  void stop_locked();  // control_ held

  // All below with mu_ held.
  int64_t now_ns() const;
  // False when not recording; otherwise stamps the events of this call.
  bool begin_call();
  int32_t intern(std::string_view text);
  int32_t negotiate_label(std::string_view op);
  TensorState& tensor(std::string_view name);
  void push(TraceKind kind, int32_t pid, int32_t label, int64_t v0 = -1, int64_t v1 = 0,
            int64_t v2 = 0);
  void close_activities(TensorState& t);
  void activity_start_locked(std::string_view name, int32_t label);
  void activity_end_locked(std::string_view name);

  void writer_main();
  void write_batch(const TraceBatch& batch);

  std::mutex control_;  // serialises start and stop; taken before mu_

  std::mutex mu_;
  std::condition_variable writer_wake_;
  std::condition_variable written_;
  bool recording_ = false;
  bool mark_cycles_ = false;
  bool stop_writer_ = false;
  std::chrono::steady_clock::time_point origin_;
  int64_t stamp_ = 0;  // time of the call being recorded: one clock read per call
  StringMap<TensorState> tensors_;
  StringMap<int32_t> strings_;
  StringMap<int32_t> negotiate_labels_;
  int32_t next_string_id_ = 0;
  int32_t next_pid_ = 1;
  TraceBatch pending_;
  TraceBatch spare_;  // the writer's last batch, kept for its capacity
  uint64_t dropped_since_write_ = 0;
  uint64_t recorded_seq_ = 0;
  uint64_t written_seq_ = 0;
  uint64_t flush_target_ = 0;

  std::atomic<bool> enabled_{false};
  std::atomic<uint64_t> dropped_total_{0};

  // Writer thread only (and start/stop while it is not running).
  std::thread writer_;
  FILE* file_ = nullptr;
  bool write_failed_ = false;
  std::string path_;
  TraceFormatter formatter_;
  std::string text_;
};

// The process's timeline: one per process, so that the file is completed by
// hvd_stop_timeline, hvd_shutdown or exit, whichever comes first.
Timeline& process_timeline();

}  // namespace hvd
