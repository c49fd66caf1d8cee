#include "timeline/timeline.h"

#include <pthread.h>
#include <stdio_ext.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "base/atomic_file.h"
#include "base/log.h"

namespace hvd {

namespace {

// The writer wakes at least this often, or sooner when this many events wait.
constexpr auto kWriterPeriod = std::chrono::milliseconds(100);
constexpr size_t kWakeEvents = 8192;
// Beyond this many unwritten events (about 48 MB) new ones are counted, not kept: a
// stuck disk must not grow the process without bound.
constexpr size_t kMaxPendingEvents = size_t{1} << 20;

}  // namespace

Timeline::~Timeline() { stop(); }

bool Timeline::start(const std::string& path, bool mark_cycles, std::string* error) {
  std::lock_guard<std::mutex> control(control_);
  stop_locked();
  if (path.empty()) {
    if (error) *error = "the timeline needs a file name";
    return false;
  }
  // Readable under its name while the job runs (chrome://tracing takes an unclosed
  // array; tools look for a tensor's row right after its first op), so the new file
  // is put in place at once rather than when complete; never through a planted link.
  std::string why;
  FILE* f = create_file_in_place(path, &why);
  if (!f) {
    if (error) *error = "the timeline: " + why;
    return false;
  }
  file_ = f;
  path_ = path;
  write_failed_ = false;
  formatter_ = TraceFormatter();
  text_.assign(TraceFormatter::kHeader);

  {
    std::lock_guard<std::mutex> lock(mu_);
    tensors_.clear();
    strings_.clear();
    negotiate_labels_.clear();
    pending_.clear();
    pending_.first_new_id = 0;
    next_string_id_ = 0;
    next_pid_ = 1;
    dropped_since_write_ = 0;
    recorded_seq_ = written_seq_ = flush_target_ = 0;
    stop_writer_ = false;
    mark_cycles_ = mark_cycles;
    origin_ = std::chrono::steady_clock::now();
    recording_ = true;
    stamp_ = 0;
    push(TraceKind::ProcessName, 0, intern("libhvd"));
  }
  enabled_.store(true, std::memory_order_relaxed);
  writer_ = std::thread([this] { writer_main(); });
  return true;
}

void Timeline::stop() {
  std::lock_guard<std::mutex> control(control_);
  stop_locked();
}

void Timeline::abandon_after_fork() {
  // The parent's threads may have held the locks or waited on the condition variables
  // at the fork; destroying them at this process's exit would then wait for ever
  // (pthread_cond_destroy waits for waiters that live in the parent). Made anew in
  // place, never destroyed as they were.
  new (&control_) std::mutex();
  new (&mu_) std::mutex();
  new (&writer_wake_) std::condition_variable();
  new (&written_) std::condition_variable();
  if (!writer_.joinable()) return;
  // Moving a std::thread copies its id and makes no call; the copy is leaked on
  // purpose, as joining or destroying it would refer to the parent's thread.
  new std::thread(std::move(writer_));
  enabled_.store(false, std::memory_order_relaxed);
  if (file_) __fpurge(file_);
  file_ = nullptr;
}

void Timeline::stop_locked() {
  if (!writer_.joinable()) return;
  enabled_.store(false, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Phases still open end here, so that every B has its E.
    stamp_ = now_ns();
    for (auto& [name, t] : tensors_) {
      close_activities(t);
      if (t.negotiating || t.op_open) push(TraceKind::End, t.pid, -1);
      t.negotiating = t.op_open = false;
    }
    recording_ = false;
    stop_writer_ = true;
  }
  writer_wake_.notify_one();
  writer_.join();
  // The writer has drained everything; close the array so the file is valid JSON.
  text_.assign(TraceFormatter::kFooter);
  if (!write_failed_ && std::fwrite(text_.data(), 1, text_.size(), file_) != text_.size())
    write_failed_ = true;
  if (std::fclose(file_) != 0) write_failed_ = true;
  if (write_failed_)
    HVD_LOG(Warning, "the timeline file '%s' is incomplete: writing it failed", path_.c_str());
  file_ = nullptr;
}

void Timeline::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!recording_) return;
  uint64_t target = recorded_seq_;
  flush_target_ = std::max(flush_target_, target);
  writer_wake_.notify_one();
  written_.wait(lock, [&] { return written_seq_ >= target || !recording_; });
}

int64_t Timeline::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now() - origin_)
      .count();
}

bool Timeline::begin_call() {
  if (!recording_) return false;
  stamp_ = now_ns();
  return true;
}

int32_t Timeline::intern(std::string_view text) {
  auto it = strings_.find(text);
  if (it != strings_.end()) return it->second;
  if (pending_.new_strings.empty()) {
    pending_.first_new_id = next_string_id_;
    // A new row or event name is written at once rather than at the next period:
    // tools (and Horovod's tests) look for a tensor's row right after its first op.
    // Names are few, so this wakes the writer rarely.
    writer_wake_.notify_one();
  }
  pending_.new_strings.emplace_back(text);
  int32_t id = next_string_id_++;
  strings_.emplace(std::string(text), id);
  return id;
}

int32_t Timeline::negotiate_label(std::string_view op) {
  auto it = negotiate_labels_.find(op);
  if (it != negotiate_labels_.end()) return it->second;
  int32_t id = intern("NEGOTIATE_" + std::string(op));
  negotiate_labels_.emplace(std::string(op), id);
  return id;
}

Timeline::TensorState& Timeline::tensor(std::string_view name) {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  TensorState state;
  state.pid = next_pid_++;
  push(TraceKind::ProcessName, state.pid, intern(name));
  return tensors_.emplace(std::string(name), state).first->second;
}

void Timeline::push(TraceKind kind, int32_t pid, int32_t label, int64_t v0, int64_t v1,
                    int64_t v2) {
  if (pending_.events.size() >= kMaxPendingEvents) {
    ++dropped_since_write_;
    dropped_total_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  pending_.events.push_back(TraceEvent{kind, pid, label, stamp_, {v0, v1, v2}});
  ++recorded_seq_;
  // Wake the writer only at the threshold: one notify per batch, not per event.
  if (pending_.events.size() == kWakeEvents) writer_wake_.notify_one();
}

void Timeline::close_activities(TensorState& t) {
  for (; t.open_activities > 0; --t.open_activities) push(TraceKind::End, t.pid, -1);
}

void Timeline::negotiate_start(std::string_view name, std::string_view op) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!begin_call()) return;
  TensorState& t = tensor(name);
  // A name reused before its last op was closed: close what is open, keep the file
  // balanced.
  close_activities(t);
  if (t.negotiating || t.op_open) push(TraceKind::End, t.pid, -1);
  t.op_open = false;
  t.negotiating = true;
  push(TraceKind::Begin, t.pid, negotiate_label(op));
}

void Timeline::negotiate_rank_ready(std::string_view name, int rank) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!begin_call()) return;
  TensorState& t = tensor(name);
  push(TraceKind::RankReady, t.pid, -1, rank);
}

void Timeline::negotiate_end(std::string_view name) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!begin_call()) return;
  TensorState& t = tensor(name);
  if (!t.negotiating) return;
  close_activities(t);
  push(TraceKind::End, t.pid, -1);
  t.negotiating = false;
}

void Timeline::op_start(std::string_view name, std::string_view op_label, int64_t bytes) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!begin_call()) return;
  TensorState& t = tensor(name);
  close_activities(t);
  if (t.negotiating || t.op_open) push(TraceKind::End, t.pid, -1);
  t.negotiating = false;
  t.op_open = true;
  push(TraceKind::Begin, t.pid, intern(op_label), bytes < 0 ? -1 : bytes);
}

void Timeline::activity_start_locked(std::string_view name, int32_t label) {
  TensorState& t = tensor(name);
  ++t.open_activities;
  push(TraceKind::Begin, t.pid, label);
}

void Timeline::activity_end_locked(std::string_view name) {
  auto it = tensors_.find(name);
  if (it == tensors_.end() || it->second.open_activities == 0) return;
  --it->second.open_activities;
  push(TraceKind::End, it->second.pid, -1);
}

void Timeline::activity_start(std::string_view name, std::string_view activity) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!begin_call()) return;
  activity_start_locked(name, intern(activity));
}

void Timeline::activity_end(std::string_view name) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!begin_call()) return;
  activity_end_locked(name);
}

void Timeline::activity_start(std::span<const std::string> names, std::string_view activity) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!begin_call()) return;
  int32_t label = intern(activity);
  for (const std::string& name : names) activity_start_locked(name, label);
}

void Timeline::activity_end(std::span<const std::string> names) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!begin_call()) return;
  for (const std::string& name : names) activity_end_locked(name);
}

void Timeline::op_end(std::string_view name, std::string_view status, std::string_view dtype,
                      std::string_view shape) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!begin_call()) return;
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return;
  TensorState& t = it->second;
  close_activities(t);
  if (!t.op_open && !t.negotiating) return;
  push(TraceKind::End, t.pid, status.empty() ? -1 : intern(status), dtype.empty() ? 0 : intern(dtype) + 1,
       shape.empty() ? 0 : intern(shape) + 1);
  t.op_open = t.negotiating = false;
}

void Timeline::mark_cycle() {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!mark_cycles_ || !begin_call()) return;
  push(TraceKind::CycleStart, 0, -1);
}

void Timeline::counters(std::string_view name, int64_t local, int64_t cross, int64_t global) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!begin_call()) return;
  push(TraceKind::Counter, 0, intern(name), local, cross, global);
}

void Timeline::step_counter(int64_t step_ns, int64_t exposed_wait_ns) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!begin_call()) return;
  const int64_t wait_us = exposed_wait_ns / 1000;
  push(TraceKind::StepCounter, 0, intern("step_time_us"), wait_us,
       std::max<int64_t>(0, step_ns / 1000 - wait_us), 0);
}

void Timeline::write_batch(const TraceBatch& batch) {
  if (write_failed_) return;
  formatter_.append(batch, &text_);
  if (std::fwrite(text_.data(), 1, text_.size(), file_) != text_.size() ||
      std::fflush(file_) != 0) {
    write_failed_ = true;
    HVD_LOG(Warning, "writing the timeline file '%s' failed (%s); the timeline stops here",
            path_.c_str(), std::strerror(errno));
  }
  text_.clear();
}

void Timeline::writer_main() {
  pthread_setname_np(pthread_self(), "hvd-timeline");
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    writer_wake_.wait_for(lock, kWriterPeriod, [&] {
      return stop_writer_ || flush_target_ > written_seq_ ||
             pending_.events.size() >= kWakeEvents || !pending_.new_strings.empty();
    });
    if (dropped_since_write_ > 0 && pending_.events.size() < kMaxPendingEvents) {
      pending_.events.push_back(TraceEvent{TraceKind::Dropped, 0, -1, now_ns(),
                                           {static_cast<int64_t>(dropped_since_write_), 0, 0}});
      dropped_since_write_ = 0;
    }
    std::swap(pending_, spare_);
    pending_.clear();
    pending_.first_new_id = next_string_id_;
    uint64_t seq = recorded_seq_;
    bool stopping = stop_writer_;
    lock.unlock();

    write_batch(spare_);

    lock.lock();
    spare_.clear();
    written_seq_ = seq;
    written_.notify_all();
    if (stopping) break;
  }
}

Timeline& process_timeline() {
  static Timeline timeline;
  return timeline;
}

}  // namespace hvd
