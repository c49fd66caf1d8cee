// The autotuner (HOROVOD_AUTOTUNE), run by the coordinator only. It is told, step by
// step, how many bytes were reduced and how long the step took; it scores each setting
// by bytes per second, as the median over a few windows of steps (one slow step does
// not sink a setting), discards the first (warm-up) samples, and chooses the next
// setting by Bayesian optimisation: the fusion threshold and the cycle time on a log
// scale, the algorithm switches and the response cache (on/off) as 0/1 coordinates.
// After the last sample it settles on the best setting. Knobs the user set, or that
// this job cannot use, stay fixed.
//
// Pure computation plus the CSV log: no MPI, no clock, no environment. The caller
// sends params() to every rank whenever record_step() returns true, so that all ranks
// switch at the same cycle:
//   coordinator, per step:   if (tuner->record_step(bytes, now - last_step_end))
//                              encode_tuned_params(tuner->params(), wire) -> negotiation
//   every rank, on receipt:  decode_tuned_params(wire, size, &p) -> apply p before
//                            planning that round's fusion
//   coordinator, shutdown:   tuner->finish() while tuner->tuning() (which warns when
//                            the log got no sample: the job was too short)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tune/bayes_opt.h"
#include "tune/tune_log.h"
#include "tune/tuned_params.h"

namespace hvd {

struct TunerConfig {
  // Horovod's knobs and defaults.
  int64_t warmup_samples = 3;        // HOROVOD_AUTOTUNE_WARMUP_SAMPLES
  int64_t steps_per_sample = 10;     // HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE: steps per window
  int64_t max_samples = 20;          // HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES
  double gaussian_process_noise = 0.8;  // HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE
  std::string log_path;              // HOROVOD_AUTOTUNE_LOG; empty: no log

  // A sample's score is the median of this many windows of steps_per_sample steps.
  int64_t windows_per_sample = 3;
  // Steps ignored after each change, while ranks switch and buffers are resized.
  int64_t settle_steps = 1;
  uint64_t seed = 0x6876645f74756e65ull;

  // The setting the job starts with: the first point measured, and the value of every
  // fixed knob.
  TunedParams initial;
  // Held at their initial value: set explicitly by the user, or not usable here (no
  // hierarchical algorithm with one node, no cache with capacity 0).
  bool fixed_fusion_threshold = false;
  bool fixed_cycle_time = false;
  bool fixed_hierarchical_allreduce = false;
  bool fixed_hierarchical_allgather = false;
  bool fixed_cache = false;

  // The search box (widened to include the initial value).
  int64_t fusion_threshold_min = 256ll << 10;
  int64_t fusion_threshold_max = 256ll << 20;
  double cycle_time_min_ms = 0.2;
  double cycle_time_max_ms = 25.0;
};

class ParameterManager {
 public:
  struct Sample {
    TunedParams params;
    double score;  // bytes per second
  };

  // nullptr with *error for an invalid config or a log file that cannot be written.
  static std::unique_ptr<ParameterManager> create(const TunerConfig& config, std::string* error);

  // One step on the coordinator: bytes reduced during it and its wall-clock seconds
  // (the time since the previous step ended, waits included). True when params()
  // changed: send it to every rank with the next negotiation.
  bool record_step(int64_t bytes, double seconds);

  // Ends tuning now on the best setting measured so far (a job that stops early).
  // True when params() changed.
  bool finish();

  // The setting to use now: the one being measured while tuning, then the chosen one.
  const TunedParams& params() const { return current_; }
  bool tuning() const { return current_.tuning; }
  // Scored samples in order, warm-up excluded.
  const std::vector<Sample>& samples() const { return samples_; }
  // Steps one sample takes (windows_per_sample windows of steps_per_sample), and the
  // steps before the first sample is logged (the warm-up ones included).
  int64_t steps_per_sample() const;
  int64_t steps_before_first_sample() const;
  // Free dimensions of the search (0: nothing to tune).
  int free_dims() const { return static_cast<int>(dims_.size()); }

 private:
  enum class Dim { FusionThreshold, CycleTime, HierarchicalAllreduce, HierarchicalAllgather,
                   Cache };

  explicit ParameterManager(const TunerConfig& config);
  TunedParams params_at(const std::vector<double>& x) const;
  std::vector<double> point_of(const TunedParams& p) const;
  bool on_sample(double score);
  bool move_to(const std::vector<double>& x);
  bool settle();

  TunerConfig config_;
  std::vector<Dim> dims_;  // continuous first
  int continuous_ = 0;
  double log_threshold_min_ = 0, log_threshold_max_ = 0;
  double log_cycle_min_ = 0, log_cycle_max_ = 0;
  BayesianOptimizer optimizer_;
  std::vector<std::vector<double>> design_;  // points to measure before the GP guides
  size_t design_next_ = 0;
  TuneLog log_;

  TunedParams current_;
  std::vector<double> current_x_;
  int64_t warmup_left_ = 0;
  int64_t settle_left_ = 0;
  int64_t window_steps_ = 0;
  double window_bytes_ = 0, window_seconds_ = 0;
  std::vector<double> window_scores_;
  std::vector<Sample> samples_;
  int64_t steps_seen_ = 0;  // measured steps, for the note on a log without a sample
};

}  // namespace hvd
