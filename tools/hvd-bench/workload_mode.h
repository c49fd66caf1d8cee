// Workload and tensors modes: one step reduces a set of gradients; libhvd and the
// references take turns on the same buffers, repetition after repetition.
#pragma once

#include "options.h"

namespace hvdbench {

// Runs after hvd_init; returns the process exit code (non-zero if a result was wrong).
int run_workload_mode(const Options& options);

}  // namespace hvdbench
