// The step summary at shutdown (HVD_SUMMARY, HVD_SUMMARY_FILE): every rank's step
// figures gathered to rank 0, with raw MPI's bus bandwidth measured on the job's
// communicator for comparison; rank 0 prints a table to standard error and writes
// the JSON file.
#pragma once

#include <string>
#include <vector>

#include <mpi.h>

#include "params/params.h"

namespace hvd {

// Whether this rank was asked for a summary (and step accounting is on).
bool step_summary_requested(const Params& params);

// Runs on the background thread after the shutdown round, which every rank leaves
// together; collective over comm. Every wait is bounded (timeout_s in all), so a rank
// that does not take part costs the others that time and a warning, never a hang.
void step_summary_at_shutdown(MPI_Comm comm, int rank, int size, const Params& params,
                              double timeout_s);

// One rank's row of the summary (per-step means over its measured steps).
struct RankSummary {
  int rank = 0;
  int64_t steps = 0;
  int64_t steps_seen = 0;  // measured here before the ranks agreed on `steps`
  double step_s = 0, wait_s = 0, negotiate_s = 0, copy_s = 0, transfer_s = 0;
  double peer_wait_s = 0;  // waiting for the last rank to enter a transfer
  double bytes = 0;
  double bus_bandwidth = 0;        // bytes/s over transfer time, 0 when nothing was transferred
  double reference_bandwidth = 0;  // bytes/s, 0 when not measured
};

struct SummaryTensor {
  std::string name;
  double wait_s = 0;  // per step, mean over ranks
};

// The JSON document of HVD_SUMMARY_FILE (a fixed interface: keys may be added, never
// renamed) and the printed table, from the gathered rows (rank order).
std::string summary_json(const std::vector<RankSummary>& ranks,
                         const std::vector<SummaryTensor>& top, int64_t warmup,
                         int64_t reference_bytes);
std::string summary_table(const std::vector<RankSummary>& ranks,
                          const std::vector<SummaryTensor>& top, int64_t warmup,
                          int64_t reference_bytes);

}  // namespace hvd
