// The step summary a libhvd job writes at shutdown when HVD_SUMMARY_FILE names a file
// (rank 0 writes it): what hvdrun --scaling reads from each run. Keys may be added to
// the file later, never renamed; unknown keys are ignored here.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "result.h"

namespace hvdrun {

struct RunSummary {
  int64_t ranks = 0;
  int64_t steps = 0;                      // measured steps
  double step_seconds = 0;                // mean step time
  std::optional<double> step_seconds_max_rank;
  std::optional<double> exposed_share;    // communication the program could not hide, 0..1
  std::optional<double> exposed_wait_seconds;
  std::optional<double> bus_bandwidth;    // bytes/s
  std::string text;                       // the file as written, for --json
};

// Reads the summary from its JSON text; source names the file in messages.
Result<RunSummary> parse_run_summary(std::string_view text, const std::string& source);

// Reads and parses the file at path. A missing or empty file is an error whose
// message says that the program wrote no summary.
Result<RunSummary> read_run_summary(const std::string& path);

}  // namespace hvdrun
