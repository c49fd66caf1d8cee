// Sweep mode: message sizes from -b to -e, one table per collective in nccl-tests'
// layout (out-of-place and in-place side by side).
#pragma once

#include "options.h"

namespace hvdbench {

int run_sweep_mode(const Options& options);

}  // namespace hvdbench
