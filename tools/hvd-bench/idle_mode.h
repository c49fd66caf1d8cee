// Idle mode: what an initialized process costs when it has nothing to reduce (a
// rank waiting for data, or between epochs): CPU time of the whole process, all of
// libhvd's threads included, and whether any negotiation or collective ran.
#pragma once

#include "options.h"

namespace hvdbench {

int run_idle_mode(const Options& options);

}  // namespace hvdbench
