#include "env_mapping.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <strings.h>

namespace hvdrun {
namespace {

Status check_non_negative(std::optional<double> v, const char* flag, double max) {
  if (v && (!std::isfinite(*v) || *v < 0 || *v > max)) {
    return Status::failure(std::string(flag) + " " + format_number(*v) +
                           ": must be a number from 0 to " + format_number(max));
  }
  return success();
}

Status check_count(std::optional<int64_t> v, const char* flag, int64_t min, int64_t max) {
  if (v && (*v < min || *v > max))
    return Status::failure(std::string(flag) + " " + std::to_string(*v) +
                           ": must be a whole number from " + std::to_string(min) + " to " +
                           std::to_string(max));
  return success();
}

// "0,8,16": whole numbers separated by commas.
bool valid_core_list(const std::string& text) {
  if (text.empty()) return false;
  bool digit_seen = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      digit_seen = true;
    } else if (c == ',' && digit_seen) {
      digit_seen = false;
    } else {
      return false;
    }
  }
  return digit_seen;
}

}  // namespace

std::string format_number(double value) {
  char buf[64];
  // Whole numbers as integers ("60", never "6e+01"): the libraries read both, people
  // read one.
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", value);
    return buf;
  }
  // Otherwise the shortest text that reads back to the same double.
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

void set_env(EnvList& list, const std::string& name, const std::string& value) {
  for (auto& entry : list) {
    if (entry.first == name) {
      entry.second = value;
      return;
    }
  }
  list.emplace_back(name, value);
}

Result<EnvList> tuning_environment(const TuningOptions& t) {
  using R = Result<EnvList>;
  constexpr double kMaxMb = 1 << 30;  // 1 PiB: any larger is a typo
  for (Status st : {check_non_negative(t.fusion_threshold_mb, "--fusion-threshold-mb", kMaxMb),
                    check_non_negative(t.cycle_time_ms, "--cycle-time-ms", 1e6),
                    check_non_negative(t.autotune_gaussian_process_noise,
                                       "--autotune-gaussian-process-noise", 1e6),
                    check_non_negative(t.stall_check_warning_time_seconds,
                                       "--stall-check-warning-time-seconds", 1e9),
                    check_non_negative(t.stall_check_shutdown_time_seconds,
                                       "--stall-check-shutdown-time-seconds", 1e9),
                    check_count(t.cache_capacity, "--cache-capacity", 0, 1 << 20),
                    check_count(t.autotune_warmup_samples, "--autotune-warmup-samples", 0,
                                1 << 20),
                    check_count(t.autotune_steps_per_sample, "--autotune-steps-per-sample", 1,
                                1 << 20),
                    check_count(t.autotune_bayes_opt_max_samples,
                                "--autotune-bayes-opt-max-samples", 1, 1 << 20)}) {
    if (!st) return R::failure(st.error());
  }

  EnvList env;
  if (t.fusion_threshold_mb) {
    // Horovod's unit: MiB on the command line, bytes in the variable.
    double bytes = std::round(*t.fusion_threshold_mb * 1024.0 * 1024.0);
    env.emplace_back("HOROVOD_FUSION_THRESHOLD",
                     std::to_string(static_cast<long long>(bytes)));
  }
  if (t.cycle_time_ms) env.emplace_back("HOROVOD_CYCLE_TIME", format_number(*t.cycle_time_ms));
  if (t.cache_capacity)
    env.emplace_back("HOROVOD_CACHE_CAPACITY", std::to_string(*t.cache_capacity));
  if (t.hierarchical_allreduce)
    env.emplace_back("HOROVOD_HIERARCHICAL_ALLREDUCE", *t.hierarchical_allreduce ? "1" : "0");
  if (t.hierarchical_allgather)
    env.emplace_back("HOROVOD_HIERARCHICAL_ALLGATHER", *t.hierarchical_allgather ? "1" : "0");
  if (t.autotune) env.emplace_back("HOROVOD_AUTOTUNE", "1");
  if (t.autotune_log_file) {
    if (t.autotune_log_file->empty())
      return R::failure("--autotune-log-file: the file name is empty");
    env.emplace_back("HOROVOD_AUTOTUNE_LOG", *t.autotune_log_file);
  }
  if (t.autotune_warmup_samples)
    env.emplace_back("HOROVOD_AUTOTUNE_WARMUP_SAMPLES", std::to_string(*t.autotune_warmup_samples));
  if (t.autotune_steps_per_sample)
    env.emplace_back("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE",
                     std::to_string(*t.autotune_steps_per_sample));
  if (t.autotune_bayes_opt_max_samples)
    env.emplace_back("HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES",
                     std::to_string(*t.autotune_bayes_opt_max_samples));
  if (t.autotune_gaussian_process_noise)
    env.emplace_back("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE",
                     format_number(*t.autotune_gaussian_process_noise));
  if (t.timeline_filename) {
    if (t.timeline_filename->empty())
      return R::failure("--timeline-filename: the file name is empty");
    env.emplace_back("HOROVOD_TIMELINE", *t.timeline_filename);
  }
  if (t.timeline_mark_cycles) env.emplace_back("HOROVOD_TIMELINE_MARK_CYCLES", "1");
  if (t.stall_check_warning_time_seconds)
    env.emplace_back("HOROVOD_STALL_CHECK_TIME_SECONDS",
                     format_number(*t.stall_check_warning_time_seconds));
  if (t.stall_check_shutdown_time_seconds)
    env.emplace_back("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS",
                     format_number(*t.stall_check_shutdown_time_seconds));
  if (t.no_stall_check) env.emplace_back("HOROVOD_STALL_CHECK_DISABLE", "1");
  if (t.log_level) {
    static const char* levels[] = {"trace", "debug", "info", "warning", "error", "fatal"};
    const char* match = nullptr;
    for (const char* level : levels)
      if (strcasecmp(level, t.log_level->c_str()) == 0) match = level;
    if (!match)
      return R::failure("--log-level " + *t.log_level +
                        ": must be one of trace, debug, info, warning, error, fatal");
    env.emplace_back("HOROVOD_LOG_LEVEL", match);
  }
  if (t.thread_affinity) {
    if (!valid_core_list(*t.thread_affinity))
      return R::failure("--thread-affinity " + *t.thread_affinity +
                        ": must be core numbers separated by commas, e.g. 0,8");
    env.emplace_back("HOROVOD_THREAD_AFFINITY", *t.thread_affinity);
  }
  return env;
}

}  // namespace hvdrun
