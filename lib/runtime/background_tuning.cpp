// The background loop's step observers and tuning: a step ends when a tensor name
// comes back (tune/step_detector.h); the step accounting records it
// (observe/step_stats.h), and on rank 0 the autotuner scores it and proposes
// parameters, which every rank applies in the round they arrive.
#include "runtime/background.h"

#include "base/log.h"
#include "observe/step_stats.h"

namespace hvd {

void BackgroundLoop::start_tuner() {
  const Params& p = rt_.params;
  if (!p.autotune || rt_.rank != 0) return;
  TunerConfig tc;
  tc.warmup_samples = p.autotune_warmup_samples;
  tc.steps_per_sample = p.autotune_steps_per_sample;
  tc.max_samples = p.autotune_bayes_opt_max_samples;
  tc.gaussian_process_noise = p.autotune_gaussian_process_noise;
  tc.log_path = p.autotune_log;
  tc.initial.fusion_threshold = fusion_.threshold;
  tc.initial.cycle_time_ms = cycle_time_ms_;
  tc.initial.hierarchical_allreduce = p.hierarchical_allreduce;
  tc.initial.hierarchical_allgather = p.hierarchical_allgather;
  tc.initial.cache_enabled = controller_.cache_enabled();
  // Knobs the user set are held; so are those with nothing to choose here: one node
  // (no hierarchy). A cache capacity the user set holds the cache on (or off, at 0).
  tc.fixed_fusion_threshold = param_is_set("HOROVOD_FUSION_THRESHOLD");
  tc.fixed_cycle_time = param_is_set("HOROVOD_CYCLE_TIME");
  tc.fixed_hierarchical_allreduce =
      param_is_set("HOROVOD_HIERARCHICAL_ALLREDUCE") || !hier_.useful();
  tc.fixed_hierarchical_allgather =
      param_is_set("HOROVOD_HIERARCHICAL_ALLGATHER") || !hier_ag_.useful();
  tc.fixed_cache = param_is_set("HOROVOD_CACHE_CAPACITY") || p.cache_capacity == 0;
  std::string why;
  tuner_ = ParameterManager::create(tc, &why);
  if (!tuner_) HVD_LOG(Warning, "autotune is off: %s", why.c_str());
}

void BackgroundLoop::observe_for_tuning(std::span<const Response> ready,
                                        const std::vector<Batch>& batches) {
  if (!tuner_->tuning()) return;
  const double now = now_seconds();
  bool step_ended = false;
  for (const Response& r : ready)
    if (r.error.ok() && r.spec.op != OpType::Join && steps_.observe(r.key, r.key_hash, r.cache_slot))
      step_ended = true;
  // A step ends when a tensor name comes back: score the step just finished.
  if (step_ended && step_start_ > 0 &&
      tuner_->record_step(step_bytes_, now - step_start_)) {
    uint8_t blob[kTunedParamsWireSize];
    encode_tuned_params(tuner_->params(), blob);
    controller_.send_tuning(std::string(reinterpret_cast<char*>(blob), sizeof blob));
    rt_.queue.poke();  // a round must carry it even if the job goes quiet now
  }
  if (step_ended || step_start_ == 0) {
    step_start_ = now;
    step_bytes_ = 0;
  }
  for (const Batch& b : batches) step_bytes_ += b.bytes;
}

void BackgroundLoop::observe_step(std::span<const Response> ready) {
  bool step_ended = false;
  for (const Response& r : ready) {
    if (!r.error.ok() || r.spec.op == OpType::Join) continue;
    if (stat_steps_.observe(r.key, r.key_hash, r.cache_slot)) step_ended = true;
    // The first tensor ever run starts the first step.
    if (!steps_started_) step_ended = steps_started_ = true;
  }
  if (!step_ended) return;
  double step_s = 0, wait_s = 0;
  if (step_stats().boundary(now_seconds(), false, &step_s, &wait_s) && rt_.rank == 0)
    process_timeline().step_counter(static_cast<int64_t>(step_s * 1e9),
                                    static_cast<int64_t>(wait_s * 1e9));
}

void BackgroundLoop::apply_tuning(const std::string& blob) {
  TunedParams tp;
  if (!decode_tuned_params(reinterpret_cast<const uint8_t*>(blob.data()), blob.size(), &tp)) {
    HVD_LOG(Warning, "ignored tuned parameters that this version cannot decode");
    return;
  }
  applied_ = tp;
  fusion_.threshold = tp.fusion_threshold;
  cycle_time_ms_ = tp.cycle_time_ms;
  executor_.use_hierarchical(tp.hierarchical_allreduce);
  plan_memo_.forget();  // the threshold is compared; fuse_large reads the hierarchical choice
  executor_.use_hierarchical_allgather(tp.hierarchical_allgather);
  // The cache changes the bit vector's length: it switches after this round's
  // responses have run (switch_cache), on every rank alike.
  if (tp.cache_enabled != controller_.cache_enabled()) cache_switch_ = tp.cache_enabled ? 1 : 0;
  HVD_LOG(Debug, "autotune: now %s", describe(tp).c_str());
}

void BackgroundLoop::switch_cache() {
  if (cache_switch_ < 0) return;
  controller_.set_cache_enabled(cache_switch_ == 1);
  cache_switch_ = -1;
  speculation_.forget();
}

void BackgroundLoop::toggle_cache_for_tests() {
  // HVD_CACHE_TOGGLE_ROUNDS: the coordinator flips the cache through the same entry
  // and the same switch-over as the autotuner's decisions, so tests can exercise them
  // often while tensors are in flight.
  const int64_t every = rt_.params.cache_toggle_rounds;
  if (rt_.rank != 0 || tuner_ || every <= 0 || rt_.params.cache_capacity == 0) return;
  if ((round_ + 1) % every != 0) return;
  toggled_cache_on_ = !toggled_cache_on_;
  TunedParams tp = applied_;
  tp.tuning = false;
  tp.cache_enabled = toggled_cache_on_;
  uint8_t blob[kTunedParamsWireSize];
  encode_tuned_params(tp, blob);
  controller_.send_tuning(std::string(reinterpret_cast<char*>(blob), sizeof blob));
}

}  // namespace hvd
