// Turning validated calls into queued requests with a handle.
#pragma once

#include <string>
#include <vector>

#include "core/runtime.h"

namespace hvd {

// Creates one handle for all requests (they complete together), pushes them, wakes
// the background thread. On failure nothing is queued and no handle exists.
Error enqueue(Runtime& rt, std::vector<Request>&& requests, hvd_handle_t* handle);

// Blocks until the handle completes and releases it; returns its result.
Error wait_handle(Runtime& rt, hvd_handle_t handle);

// The name used for a call without one: "<op>.noname.<n>", n counting per process.
std::string auto_name(Runtime& rt, const char* op);

}  // namespace hvd
