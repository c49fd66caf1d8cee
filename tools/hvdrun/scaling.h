// hvdrun --scaling N,N,...: the same command run once per size, each run writing its
// step summary (HVD_SUMMARY_FILE) into a temporary folder, then the table of
// scaling_report.h, and --json / --plot.
#pragma once

#include "options.h"
#include "plan.h"

namespace hvdrun {

// Returns hvdrun's exit status: 0; a failed run's own status; kUsageError for bad
// options (found before anything runs); 1 when a run wrote no usable summary or the
// report could not be written or drawn.
int run_scaling(const LaunchOptions& options, const PlanContext& context);

}  // namespace hvdrun
