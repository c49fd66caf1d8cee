#include "tune/parameter_manager.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>

#include "base/log.h"

namespace hvd {

namespace {

constexpr int64_t kThresholdGranule = 4096;  // thresholds are whole pages
// At 200 samples choosing the next point takes about 0.1 s of the coordinator's
// background thread (fitting the model is cubic in the samples); beyond, it would stall
// the job it is meant to speed up.
constexpr int64_t kMaxSamples = 200;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string check_config(const TunerConfig& c) {
  if (c.warmup_samples < 0) return "HOROVOD_AUTOTUNE_WARMUP_SAMPLES must be 0 or more";
  if (c.steps_per_sample < 1) return "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE must be 1 or more";
  if (c.max_samples < 1 || c.max_samples > kMaxSamples)
    return "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES must be 1 to " + std::to_string(kMaxSamples) +
           " (the model's cost grows with the cube of the samples)";
  if (!std::isfinite(c.gaussian_process_noise) || c.gaussian_process_noise < 0)
    return "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE must be a finite number >= 0";
  if (c.windows_per_sample < 1) return "the autotuner needs at least one window per sample";
  if (c.settle_steps < 0) return "the autotuner's settle steps must be 0 or more";
  if (c.fusion_threshold_min <= 0 || c.fusion_threshold_max < c.fusion_threshold_min)
    return "the autotuner's fusion threshold range must satisfy 0 < min <= max";
  if (!std::isfinite(c.cycle_time_min_ms) || !std::isfinite(c.cycle_time_max_ms) ||
      c.cycle_time_min_ms <= 0 || c.cycle_time_max_ms < c.cycle_time_min_ms)
    return "the autotuner's cycle time range must satisfy 0 < min <= max";
  if (c.initial.fusion_threshold < 0) return "the initial fusion threshold is negative";
  if (!std::isfinite(c.initial.cycle_time_ms) || c.initial.cycle_time_ms < 0)
    return "the initial cycle time must be a finite number >= 0";
  return {};
}

int count_continuous(const TunerConfig& c) {
  return (c.fixed_fusion_threshold ? 0 : 1) + (c.fixed_cycle_time ? 0 : 1);
}
int count_binary(const TunerConfig& c) {
  return (c.fixed_hierarchical_allreduce ? 0 : 1) + (c.fixed_hierarchical_allgather ? 0 : 1) +
         (c.fixed_cache ? 0 : 1);
}

}  // namespace

std::unique_ptr<ParameterManager> ParameterManager::create(const TunerConfig& config,
                                                           std::string* error) {
  std::string why = check_config(config);
  if (!why.empty()) {
    if (error) *error = why;
    return nullptr;
  }
  std::unique_ptr<ParameterManager> pm(new ParameterManager(config));
  if (!config.log_path.empty() && !pm->log_.open(config.log_path, error)) return nullptr;
  if (pm->dims_.empty())
    HVD_LOG(Info, "autotune: nothing to tune (every parameter is fixed); keeping %s",
            describe(pm->current_).c_str());
  return pm;
}

ParameterManager::ParameterManager(const TunerConfig& config)
    : config_(config),
      optimizer_(count_continuous(config), count_binary(config), config.gaussian_process_noise,
                 config.seed) {
  if (!config_.fixed_fusion_threshold) dims_.push_back(Dim::FusionThreshold);
  if (!config_.fixed_cycle_time) dims_.push_back(Dim::CycleTime);
  continuous_ = static_cast<int>(dims_.size());
  if (!config_.fixed_hierarchical_allreduce) dims_.push_back(Dim::HierarchicalAllreduce);
  if (!config_.fixed_hierarchical_allgather) dims_.push_back(Dim::HierarchicalAllgather);
  if (!config_.fixed_cache) dims_.push_back(Dim::Cache);

  // The box includes the starting point, so that its measurement sits where it was
  // taken (a threshold of 0, fusion off, cannot be on a log scale and is clamped).
  double tmin = static_cast<double>(config_.fusion_threshold_min);
  double tmax = static_cast<double>(config_.fusion_threshold_max);
  if (config_.initial.fusion_threshold > 0) {
    tmin = std::min(tmin, static_cast<double>(config_.initial.fusion_threshold));
    tmax = std::max(tmax, static_cast<double>(config_.initial.fusion_threshold));
  }
  double cmin = config_.cycle_time_min_ms, cmax = config_.cycle_time_max_ms;
  if (config_.initial.cycle_time_ms > 0) {
    cmin = std::min(cmin, config_.initial.cycle_time_ms);
    cmax = std::max(cmax, config_.initial.cycle_time_ms);
  }
  log_threshold_min_ = std::log(tmin);
  log_threshold_max_ = std::log(tmax);
  log_cycle_min_ = std::log(cmin);
  log_cycle_max_ = std::log(cmax);

  current_ = config_.initial;
  current_.torus_allreduce = false;
  current_.generation = 0;
  current_.tuning = !dims_.empty();
  current_x_ = point_of(current_);
  warmup_left_ = config_.warmup_samples;

  const int binary = static_cast<int>(dims_.size()) - continuous_;
  if (continuous_ == 0) {
    // A finite space: measure every combination once (each is already a median).
    for (uint32_t bits = 0; bits < (1u << binary); ++bits) {
      std::vector<double> x(static_cast<size_t>(binary));
      for (int b = 0; b < binary; ++b) x[static_cast<size_t>(b)] = (bits >> b) & 1;
      if (x != current_x_) design_.push_back(x);
    }
  } else {
    // A space-filling start (measured after the starting point) before the model
    // guides: 2d + 1 points find narrow optima that d + 1 miss, within the budget.
    int64_t n = std::max<int64_t>(2 * static_cast<int64_t>(dims_.size()) + 1, 5);
    n = std::min<int64_t>(n, config_.max_samples - 1);
    design_ = optimizer_.initial_design(static_cast<int>(n));
  }
}

TunedParams ParameterManager::params_at(const std::vector<double>& x) const {
  TunedParams p = current_;
  for (size_t i = 0; i < dims_.size(); ++i) {
    double v = std::clamp(x[i], 0.0, 1.0);
    switch (dims_[i]) {
      case Dim::FusionThreshold: {
        double bytes = std::exp(log_threshold_min_ + v * (log_threshold_max_ - log_threshold_min_));
        int64_t granules = std::llround(bytes / kThresholdGranule);
        p.fusion_threshold = std::max<int64_t>(granules, 1) * kThresholdGranule;
        break;
      }
      case Dim::CycleTime: {
        double ms = std::exp(log_cycle_min_ + v * (log_cycle_max_ - log_cycle_min_));
        p.cycle_time_ms = std::round(ms * 100) / 100;
        if (p.cycle_time_ms <= 0) p.cycle_time_ms = 0.01;
        break;
      }
      case Dim::HierarchicalAllreduce: p.hierarchical_allreduce = v >= 0.5; break;
      case Dim::HierarchicalAllgather: p.hierarchical_allgather = v >= 0.5; break;
      case Dim::Cache: p.cache_enabled = v >= 0.5; break;
    }
  }
  return p;
}

std::vector<double> ParameterManager::point_of(const TunedParams& p) const {
  std::vector<double> x(dims_.size());
  auto unit = [](double v, double lo, double hi) {
    return hi > lo ? std::clamp((v - lo) / (hi - lo), 0.0, 1.0) : 0.0;
  };
  for (size_t i = 0; i < dims_.size(); ++i) {
    switch (dims_[i]) {
      case Dim::FusionThreshold:
        x[i] = p.fusion_threshold > 0
                   ? unit(std::log(static_cast<double>(p.fusion_threshold)), log_threshold_min_,
                          log_threshold_max_)
                   : 0.0;
        break;
      case Dim::CycleTime:
        x[i] = p.cycle_time_ms > 0 ? unit(std::log(p.cycle_time_ms), log_cycle_min_, log_cycle_max_)
                                   : 0.0;
        break;
      case Dim::HierarchicalAllreduce: x[i] = p.hierarchical_allreduce; break;
      case Dim::HierarchicalAllgather: x[i] = p.hierarchical_allgather; break;
      case Dim::Cache: x[i] = p.cache_enabled; break;
    }
  }
  return x;
}

bool ParameterManager::record_step(int64_t bytes, double seconds) {
  if (!current_.tuning) return false;
  if (bytes < 0 || !std::isfinite(seconds) || seconds < 0) return false;  // not a measurement
  ++steps_seen_;
  if (settle_left_ > 0) {
    --settle_left_;
    return false;
  }
  window_bytes_ += static_cast<double>(bytes);
  window_seconds_ += seconds;
  if (++window_steps_ < config_.steps_per_sample) return false;
  window_scores_.push_back(window_seconds_ > 0 ? window_bytes_ / window_seconds_ : 0.0);
  window_steps_ = 0;
  window_bytes_ = window_seconds_ = 0;
  if (static_cast<int64_t>(window_scores_.size()) < config_.windows_per_sample) return false;
  double score = median(window_scores_);
  window_scores_.clear();
  return on_sample(score);
}

bool ParameterManager::on_sample(double score) {
  if (warmup_left_ > 0) {
    --warmup_left_;
    HVD_LOG(Debug, "autotune: warm-up sample discarded (%.4g bytes/s, %" PRId64 " left)", score,
            warmup_left_);
    return false;
  }
  samples_.push_back({current_, score});
  log_.row(current_, score);
  optimizer_.add_sample(current_x_, score);
  HVD_LOG(Debug, "autotune: sample %zu: %s -> %.4g bytes/s", samples_.size(),
          describe(current_).c_str(), score);

  bool space_exhausted = continuous_ == 0 && design_next_ >= design_.size();
  if (static_cast<int64_t>(samples_.size()) >= config_.max_samples || space_exhausted)
    return settle();
  if (design_next_ < design_.size()) return move_to(design_[design_next_++]);
  return move_to(optimizer_.next_point());
}

bool ParameterManager::move_to(const std::vector<double>& x) {
  TunedParams next = params_at(x);
  next.tuning = true;
  next.generation = current_.generation + 1;
  current_ = next;
  current_x_ = point_of(current_);  // where the rounded setting really lies
  settle_left_ = config_.settle_steps;
  window_scores_.clear();
  window_steps_ = 0;
  window_bytes_ = window_seconds_ = 0;
  return true;
}

bool ParameterManager::settle() {
  size_t best = 0;
  if (continuous_ > 0) {
    best = static_cast<size_t>(std::max(optimizer_.best_index(), 0));
  } else {
    for (size_t i = 1; i < samples_.size(); ++i)
      if (samples_[i].score > samples_[best].score) best = i;
  }
  TunedParams chosen = samples_[best].params;
  chosen.tuning = false;
  chosen.generation = current_.generation + 1;
  current_ = chosen;
  log_.row(chosen, samples_[best].score);
  HVD_LOG(Info, "autotune: finished after %zu samples; chosen %s (%.4g bytes/s)",
          samples_.size(), describe(chosen).c_str(), samples_[best].score);
  return true;
}

int64_t ParameterManager::steps_per_sample() const {
  return config_.steps_per_sample * config_.windows_per_sample;
}

int64_t ParameterManager::steps_before_first_sample() const {
  // The starting setting is measured at once (no settling steps before it); the
  // warm-up samples are taken there too.
  return (config_.warmup_samples + 1) * steps_per_sample();
}

bool ParameterManager::finish() {
  if (!current_.tuning) return false;
  if (samples_.empty()) {
    // Nothing measured beyond warm-up: keep the starting setting.
    TunedParams start = config_.initial;
    start.torus_allreduce = false;
    start.tuning = false;
    start.generation = current_.generation + 1;
    current_ = start;
    HVD_LOG(Info, "autotune: stopped before any sample; keeping %s", describe(current_).c_str());
    // A log with only its header looks like a failure of the tuner; say why it is empty.
    if (log_.is_open())
      HVD_LOG(Warning,
              "autotune: the log '%s' has no sample: the job ended after %" PRId64
              " steps, and the first sample needs %" PRId64 " (%" PRId64 " warm-up and 1 measured, %" PRId64
              " steps each: HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE=%" PRId64 " times %" PRId64
              " windows); run more steps or lower HOROVOD_AUTOTUNE_WARMUP_SAMPLES or "
              "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE",
              log_.path().c_str(), steps_seen_, steps_before_first_sample(),
              config_.warmup_samples, steps_per_sample(), config_.steps_per_sample,
              config_.windows_per_sample);
    return true;  // the tuning flag changed
  }
  return settle();
}

}  // namespace hvd
