#include "runtime/enqueue.h"

#include <atomic>

#include "observe/step_stats.h"

namespace hvd {

HandleTable& handle_table() {
  // Never destroyed: exit() runs static destructors while other threads may still
  // wait on a handle (a fatal-signal handler's exit, a thread still in hvd_wait while
  // main returns), and a destroyed table freed the states they read.
  static HandleTable& table = *new HandleTable;
  return table;
}

Error enqueue(Runtime& rt, std::vector<Request>&& requests, hvd_handle_t* handle) {
  HandleState* state = nullptr;
  hvd_handle_t h = handle_table().add(static_cast<int>(requests.size()), &state);
  if (step_stats().enabled() && !requests.empty()) state->set_name(requests.front().name);
  double now = now_seconds();
  for (Request& r : requests) {
    r.handle = state;
    r.enqueue_time = now;
  }
  Error err = rt.queue.push(std::move(requests));
  if (!err.ok()) {
    handle_table().take(h);
    return err;
  }
  *handle = h;
  return Error::success();
}

namespace {
thread_local std::string t_name_storage;
}  // namespace

std::string take_name_storage() { return std::move(t_name_storage); }

Error enqueue(Runtime& rt, Request&& request, hvd_handle_t* handle) {
  HandleState* state = nullptr;
  hvd_handle_t h = handle_table().add(1, &state);
  if (step_stats().enabled()) state->set_name(request.name);
  request.handle = state;
  request.enqueue_time = now_seconds();
  Error err = rt.queue.push(std::move(request), &t_name_storage);
  if (!err.ok()) {
    handle_table().take(h);
    return err;
  }
  *handle = h;
  return Error::success();
}

bool enqueue_repeat(Runtime& rt, std::string_view name, const RepeatCall& call, const void* send,
                    void* recv, hvd_handle_t* handle) {
  HandleState* state = nullptr;
  hvd_handle_t h = handle_table().add(1, &state);
  if (step_stats().enabled()) state->set_name(name);
  if (!rt.queue.push_repeat(name, call, send, recv, state, now_seconds())) {
    handle_table().take(h);
    return false;
  }
  *handle = h;
  return true;
}

void hurry(const HandleState& state) {
  if (state.done()) return;
  // The runtime, if any, is the one that queued it (a handle of an earlier one was
  // completed by its shutdown); the queue checks that the operation is still queued.
  if (auto rt = current_runtime()) rt->queue.flush(state.queued_at());
}

void wait_counted(const HandleState& state, int64_t spin_us) {
  StepStats& stats = step_stats();
  if (!stats.enabled()) {
    state.wait(spin_us);
    return;
  }
  int64_t blocked_ns = 0;
  state.wait(spin_us, &blocked_ns);
  if (blocked_ns > 0) stats.add_wait(state.name(), blocked_ns);
}

Error wait_handle(hvd_handle_t handle, int64_t spin_us) {
  auto state = handle_table().take(handle);
  if (!state)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "unknown handle %lld: it was never returned by libhvd, or was already "
                      "waited for",
                      static_cast<long long>(handle));
  hurry(*state.get());
  wait_counted(*state.get(), spin_us);
  return state->result();
}

std::string auto_name(Runtime& rt, const char* op, int32_t process_set) {
  int64_t n;
  {
    std::lock_guard<std::mutex> lock(rt.auto_name_mutex);
    n = rt.auto_name_counters[process_set]++;
  }
  return std::string(op) + kAutoNameInfix + std::to_string(n);
}

}  // namespace hvd
