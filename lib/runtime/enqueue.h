// Turning validated calls into queued requests with a handle.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/runtime.h"

namespace hvd {

// Creates one handle for all requests (they complete together), pushes them, wakes
// the background thread. On failure nothing is queued and no handle exists.
Error enqueue(Runtime& rt, std::vector<Request>&& requests, hvd_handle_t* handle);
Error enqueue(Runtime& rt, Request&& request, hvd_handle_t* handle);
// A plain allreduce that repeats the last push under its global-set name
// (TensorQueue::push_repeat): true with *handle set when queued; false, with no handle
// made, when it is not such a repeat and must be built and enqueued.
bool enqueue_repeat(Runtime& rt, std::string_view name, const RepeatCall& call, const void* send,
                    void* recv, hvd_handle_t* handle);

// Storage for the next tensor name this thread resolves: the string of a name that
// completed, handed back by the queue at enqueue, or an empty string.
std::string take_name_storage();

// Handles outlive the runtime: an operation failed by hvd_shutdown can still be
// waited for afterwards, and reports HVD_ERR_SHUT_DOWN.
HandleTable& handle_table();

// Microseconds a thread waiting on an operation (and the background thread waiting on
// an MPI request) polls before it sleeps: most small operations complete within it,
// and a sleep and wake-up cost more. Was HVD_SPIN_US, never worth changing.
constexpr int64_t kWaitSpinUs = 50;

// Before a caller blocks on an operation: if it is still queued, the background thread
// stops waiting for the rest of a burst (the caller's burst is over) and takes it now.
void hurry(const HandleState& state);

// HandleState::wait, and a wait that blocked adds its time to the step accounting
// under the handle's tensor name (observe/step_stats.h). Every caller's wait on a
// handle goes through here.
void wait_counted(const HandleState& state, int64_t spin_us);

// Blocks until the handle completes and releases it; returns its result.
// spin_us: how long to poll before sleeping.
Error wait_handle(hvd_handle_t handle, int64_t spin_us);

// The name used for a call without one: "<op>.noname.<n>", n counting the calls this
// process made on that process set (so ranks of a set stay in step whatever else
// they call on other sets).
std::string auto_name(Runtime& rt, const char* op, int32_t process_set);

}  // namespace hvd
