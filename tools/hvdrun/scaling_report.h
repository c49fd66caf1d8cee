// hvdrun --scaling: from each run's step summary to the figures users choose a job
// size by (weak scaling, efficiency against the smallest size run) and, given a price,
// what the job costs at each size.
//
// Cost model, with n0 the smallest size, T the job's hours on n0 ranks, P the price
// of one rank (worker) per hour and W the value of an hour of waiting:
//   efficiency  S_N   = step_time(n0) / step_time(N)            (1 at n0)
//   time        t_N   = T * n0 / (N * S_N)                      hours
//   cost        c_N   = t_N * N * P
//   total       c_N + t_N * W
//   break-even  S*_N  = n0 * (N*P + W) / (N * (n0*P + W))
// S*_N is the efficiency at which N ranks cost, in total, what n0 ranks do; above
// it the larger job is the better deal. Pure functions: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "run_summary.h"

namespace hvdrun {

struct CostInputs {
  std::optional<double> samples_per_step;  // samples per rank per step
  std::optional<double> price_per_hour;    // P, per rank
  std::optional<double> hours;             // T, on the smallest size
  std::optional<double> time_value;        // W, per hour of waiting
};

struct ScalingRow {
  int64_t ranks = 0;
  double step_seconds = 0;
  double throughput = 0;  // samples/s with samples_per_step, else rank-steps/s
  double efficiency = 0;
  std::optional<double> exposed_share;
  std::optional<double> hours, cost, total, break_even_efficiency;
};

struct ScalingReport {
  CostInputs inputs;
  std::vector<ScalingRow> rows;       // by size, smallest first
  std::vector<RunSummary> summaries;  // the same order
};

// Runs must be given smallest size first, each with step_seconds > 0.
ScalingReport make_scaling_report(std::vector<RunSummary> runs, const CostInputs& inputs);

// The table hvdrun prints, with a line saying what the cost columns assume.
std::string format_scaling_table(const ScalingReport& report);

// Every figure as one JSON object: the inputs, the rows and each run's own summary.
std::string scaling_report_json(const ScalingReport& report);

}  // namespace hvdrun
