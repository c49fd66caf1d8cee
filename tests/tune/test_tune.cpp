// The autotuner on synthetic score functions: it finds their optimum within the
// sample budget from a poor start, holds fixed knobs, discards warm-up samples, takes
// medians, writes Horovod's CSV, and the tuned values survive their wire form.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "base/log.h"
#include "tune/gaussian_process.h"
#include "tune/parameter_manager.h"
#include "tune/step_detector.h"
#include "tune/tune_log.h"
#include "tune/tuned_params.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using namespace hvd;

namespace {

std::string g_dir;

constexpr int64_t MiB = 1 << 20;

using ScoreFn = std::function<double(const TunedParams&)>;

// A poor start, as in the benchmark: 1 MiB threshold, 10 ms cycle.
TunerConfig poor_start() {
  TunerConfig c;
  c.initial.fusion_threshold = 1 * MiB;
  c.initial.cycle_time_ms = 10;
  c.fixed_hierarchical_allreduce = c.fixed_hierarchical_allgather = c.fixed_cache = true;
  return c;
}

// Bytes per second peaking at a 32 MiB threshold and a 2 ms cycle, a tenth of the peak
// far from it.
double smooth_peak(const TunedParams& p) {
  double t = std::log2(static_cast<double>(p.fusion_threshold)) - 25;
  double c = std::log(p.cycle_time_ms / 2.0) / 0.7;
  return 1e8 + 9e8 * std::exp(-0.5 * (t * t / 4 + c * c));
}
const double kSmoothPeakBest = 1e9;

// Feeds steps of 10 ms until tuning ends; noise is a relative spread per step, from a
// fixed sequence. Returns the number of steps.
int64_t drive(ParameterManager& pm, const ScoreFn& score, double noise = 0.0,
              int64_t max_steps = 100000) {
  uint64_t state = 12345;
  int64_t steps = 0;
  while (pm.tuning() && steps < max_steps) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double u = static_cast<double>(state >> 11) * 0x1.0p-53;  // [0, 1)
    double seconds = 0.01;
    double bytes = score(pm.params()) * seconds * (1 + noise * (2 * u - 1));
    pm.record_step(static_cast<int64_t>(bytes), seconds);
    ++steps;
  }
  return steps;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

void wire_form_round_trips(void**) {
  TunedParams p;
  p.fusion_threshold = (256ll << 20) + 4096;
  p.cycle_time_ms = 2.5;
  p.hierarchical_allreduce = true;
  p.cache_enabled = false;
  p.tuning = true;
  p.generation = 0xDEADBEEF;
  uint8_t wire[kTunedParamsWireSize];
  encode_tuned_params(p, wire);
  TunedParams q;
  assert_true(decode_tuned_params(wire, sizeof wire, &q));
  assert_true(q == p);

  TunedParams untouched;
  assert_false(decode_tuned_params(wire, sizeof wire - 1, &untouched));
  assert_false(decode_tuned_params(nullptr, sizeof wire, &untouched));
  uint8_t bad[kTunedParamsWireSize];
  std::memcpy(bad, wire, sizeof bad);
  bad[0] = 99;  // a version we do not know
  assert_false(decode_tuned_params(bad, sizeof bad, &untouched));
  std::memcpy(bad, wire, sizeof bad);
  bad[1] |= 0x80;  // an unknown flag
  assert_false(decode_tuned_params(bad, sizeof bad, &untouched));
  p.fusion_threshold = -1;
  encode_tuned_params(p, bad);
  assert_false(decode_tuned_params(bad, sizeof bad, &untouched));
  p.fusion_threshold = 0;
  p.cycle_time_ms = NAN;
  encode_tuned_params(p, bad);
  assert_false(decode_tuned_params(bad, sizeof bad, &untouched));
  assert_true(untouched == TunedParams());
}

void gaussian_process_fits_and_doubts(void**) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int i = 0; i <= 8; ++i) {
    double v = i / 8.0;
    x.push_back({v});
    y.push_back(std::sin(6 * v));
  }
  GaussianProcess gp;
  gp.fit(x, y, 1e-6);
  double mean, var, far_var;
  for (int i = 0; i <= 8; ++i) {
    gp.predict(x[static_cast<size_t>(i)], &mean, &var);
    assert_true(std::fabs(mean - y[static_cast<size_t>(i)]) < 1e-3);
  }
  gp.predict({1.0 / 16}, &mean, &var);
  assert_true(std::fabs(mean - std::sin(6.0 / 16)) < 0.05);
  gp.predict({3.0}, &mean, &far_var);  // far from every point: unsure
  assert_true(far_var > 100 * var);
  // Improvement is expected where the mean is high or the doubt large.
  assert_true(expected_improvement(1.0, 0.01, 0.5, 0) > expected_improvement(0.4, 0.01, 0.5, 0));
  assert_true(expected_improvement(0.4, 1.0, 0.5, 0) > expected_improvement(0.4, 0.01, 0.5, 0));
  assert_true(expected_improvement(0.4, 0.0, 0.5, 0) == 0.0);
}

void finds_a_smooth_peak(void**) {
  TunerConfig c = poor_start();
  auto pm = ParameterManager::create(c, nullptr);
  assert_non_null(pm.get());
  assert_int_equal(pm->free_dims(), 2);
  int64_t steps = drive(*pm, smooth_peak);
  assert_false(pm->tuning());
  assert_int_equal(pm->samples().size(), c.max_samples);
  double chosen = smooth_peak(pm->params());
  std::printf("smooth peak: %.3g of the best after %zu samples (%lld steps); chosen %s\n",
              chosen / kSmoothPeakBest, pm->samples().size(), static_cast<long long>(steps),
              describe(pm->params()).c_str());
  assert_true(chosen >= 0.9 * kSmoothPeakBest);
}

void finds_a_peak_through_noise(void**) {
  TunerConfig c = poor_start();
  auto pm = ParameterManager::create(c, nullptr);
  drive(*pm, smooth_peak, 0.2);  // every step off by up to 20%
  double chosen = smooth_peak(pm->params());
  std::printf("noisy smooth peak: %.3g of the best; chosen %s\n", chosen / kSmoothPeakBest,
              describe(pm->params()).c_str());
  assert_true(chosen >= 0.9 * kSmoothPeakBest);
}

// Under heavy noise (every step off by up to 60%) the chosen setting is one whose own
// samples scored in the better half, not a point the model merely extrapolates to.
void heavy_noise_keeps_a_measured_good_point(void**) {
  TunerConfig c = poor_start();
  auto pm = ParameterManager::create(c, nullptr);
  drive(*pm, smooth_peak, 0.6);
  std::vector<double> scores;
  double chosen_score = -1;
  for (const auto& sample : pm->samples()) {
    scores.push_back(sample.score);
    if (sample.params.fusion_threshold == pm->params().fusion_threshold &&
        sample.params.cycle_time_ms == pm->params().cycle_time_ms)
      chosen_score = std::max(chosen_score, sample.score);
  }
  std::sort(scores.begin(), scores.end());
  const double median = scores[scores.size() / 2];
  std::printf("very noisy smooth peak: %.3g of the best; chosen %s, its sample %.3g x the median\n",
              smooth_peak(pm->params()) / kSmoothPeakBest, describe(pm->params()).c_str(),
              chosen_score / median);
  assert_true(chosen_score >= median);
  assert_true(smooth_peak(pm->params()) >= 0.8 * kSmoothPeakBest);
}

// A narrow optimum (one octave of threshold, a 0.6 ms cycle) on a flat floor: the
// space-filling start must land near it.
void finds_a_narrow_peak(void**) {
  auto score = [](const TunedParams& p) {
    double t = std::log2(static_cast<double>(p.fusion_threshold)) - 22;
    double c = std::log(p.cycle_time_ms / 0.6) / 0.5;
    return 2e8 + 8e8 * std::exp(-0.5 * (t * t + c * c));
  };
  auto pm = ParameterManager::create(poor_start(), nullptr);
  drive(*pm, score);
  std::printf("narrow peak: %.3g of the best; chosen %s\n", score(pm->params()) / 1e9,
              describe(pm->params()).c_str());
  assert_true(score(pm->params()) >= 0.9e9);
}

// Budgets too small for a space-filling start still end on the best measured point.
void tiny_budgets(void**) {
  for (int64_t budget : {1, 2, 3}) {
    TunerConfig c = poor_start();
    c.max_samples = budget;
    auto pm = ParameterManager::create(c, nullptr);
    drive(*pm, smooth_peak);
    assert_false(pm->tuning());
    assert_int_equal(pm->samples().size(), budget);
    double best = 0;
    for (const auto& s : pm->samples()) best = std::max(best, smooth_peak(s.params));
    assert_true(smooth_peak(pm->params()) == best);
  }
}

// The best point is a corner of the box: the largest threshold, the shortest cycle.
void finds_a_corner(void**) {
  TunerConfig c = poor_start();
  auto score = [](const TunedParams& p) {
    return 1e8 * std::log2(static_cast<double>(p.fusion_threshold)) / (1 + p.cycle_time_ms);
  };
  auto pm = ParameterManager::create(c, nullptr);
  drive(*pm, score);
  TunedParams best;
  best.fusion_threshold = c.fusion_threshold_max;
  best.cycle_time_ms = c.cycle_time_min_ms;
  std::printf("corner: %.3g of the best; chosen %s\n", score(pm->params()) / score(best),
              describe(pm->params()).c_str());
  assert_true(score(pm->params()) >= 0.9 * score(best));
}

// Algorithm switches with the continuous knobs: hierarchical allreduce gains 40%, the
// cache 15%, hierarchical allgather costs 10%.
void finds_the_right_switches(void**) {
  TunerConfig c = poor_start();
  c.fixed_hierarchical_allreduce = c.fixed_hierarchical_allgather = c.fixed_cache = false;
  auto score = [](const TunedParams& p) {
    return smooth_peak(p) * (p.hierarchical_allreduce ? 1.4 : 1.0) * (p.cache_enabled ? 1.15 : 1.0) *
           (p.hierarchical_allgather ? 0.9 : 1.0);
  };
  auto pm = ParameterManager::create(c, nullptr);
  assert_int_equal(pm->free_dims(), 5);
  drive(*pm, score);
  const TunedParams& p = pm->params();
  std::printf("switches: %.3g of the best; chosen %s\n",
              score(p) / (kSmoothPeakBest * 1.4 * 1.15), describe(p).c_str());
  assert_true(p.hierarchical_allreduce);
  assert_true(p.cache_enabled);
  assert_false(p.hierarchical_allgather);
  assert_true(score(p) >= 0.9 * kSmoothPeakBest * 1.4 * 1.15);
}

// The single-node case: the threshold, the cycle time and the cache free. cache_gain is
// the score with the cache off over the score with it on.
void tunes_the_cache_beside_the_continuous_knobs(double cache_gain) {
  TunerConfig c = poor_start();
  c.fixed_cache = false;
  c.log_path = g_dir + "/cache.csv";
  auto score = [cache_gain](const TunedParams& p) {
    return smooth_peak(p) * (p.cache_enabled ? 1.0 : cache_gain);
  };
  const double best = kSmoothPeakBest * std::max(1.0, cache_gain);
  auto pm = ParameterManager::create(c, nullptr);
  assert_non_null(pm.get());
  assert_int_equal(pm->free_dims(), 3);
  drive(*pm, score);
  const TunedParams& p = pm->params();
  std::printf("cache %s pays %.2f x: %.3g of the best; chosen %s\n",
              cache_gain > 1 ? "off" : "on", cache_gain > 1 ? cache_gain : 1 / cache_gain,
              score(p) / best, describe(p).c_str());
  assert_true(p.cache_enabled == (cache_gain < 1));
  assert_true(score(p) >= 0.9 * best);
  // The start (cache on) is measured first; both states are measured several times.
  assert_true(pm->samples()[0].params.cache_enabled);
  int on = 0, off = 0;
  for (const auto& sample : pm->samples()) (sample.params.cache_enabled ? on : off)++;
  assert_true(on >= 2 && off >= 2);
  // The log's cache_enabled column is each sample's cache state, the choice last.
  std::vector<std::string> rows = read_lines(c.log_path);
  assert_int_equal(rows.size(), pm->samples().size() + 2);
  for (size_t i = 0; i < pm->samples().size(); ++i)
    assert_true(split(rows[i + 1], ',')[3] == (pm->samples()[i].params.cache_enabled ? "1" : "0"));
  assert_true(split(rows.back(), ',')[3] == (p.cache_enabled ? "1" : "0"));
}

void turns_the_cache_off_when_that_pays(void**) { tunes_the_cache_beside_the_continuous_knobs(1.25); }
void keeps_the_cache_when_it_pays(void**) { tunes_the_cache_beside_the_continuous_knobs(0.8); }

// HOROVOD_CACHE_CAPACITY=0 set by the user: the cache stays off in every sample.
void holds_a_cache_that_is_off(void**) {
  TunerConfig c = poor_start();
  c.initial.cache_enabled = false;
  c.fixed_cache = true;
  c.log_path = g_dir + "/cache_off.csv";
  auto score = [](const TunedParams& p) { return smooth_peak(p) * (p.cache_enabled ? 2.0 : 1.0); };
  auto pm = ParameterManager::create(c, nullptr);
  assert_int_equal(pm->free_dims(), 2);
  drive(*pm, score);
  for (const auto& sample : pm->samples()) assert_false(sample.params.cache_enabled);
  assert_false(pm->params().cache_enabled);
  std::vector<std::string> rows = read_lines(c.log_path);
  for (size_t i = 1; i < rows.size(); ++i) assert_true(split(rows[i], ',')[3] == "0");
}

void holds_fixed_knobs(void**) {
  TunerConfig c = poor_start();
  c.fixed_cycle_time = true;
  c.fixed_cache = false;
  c.initial.cycle_time_ms = 3.5;
  c.initial.hierarchical_allgather = true;  // fixed on
  auto pm = ParameterManager::create(c, nullptr);
  assert_int_equal(pm->free_dims(), 2);
  drive(*pm, smooth_peak);
  for (const ParameterManager::Sample& s : pm->samples()) {
    assert_true(s.params.cycle_time_ms == 3.5);
    assert_true(s.params.hierarchical_allgather);
    assert_false(s.params.hierarchical_allreduce);
    assert_false(s.params.torus_allreduce);
  }
  assert_true(pm->params().cycle_time_ms == 3.5);
  assert_true(pm->params().hierarchical_allgather);
  // Only the threshold matters here; its peak is 32 MiB.
  double t = std::log2(static_cast<double>(pm->params().fusion_threshold));
  assert_true(std::fabs(t - 25) < 1.0);
}

void nothing_free_means_no_tuning(void**) {
  TunerConfig c = poor_start();
  c.fixed_fusion_threshold = c.fixed_cycle_time = true;
  auto pm = ParameterManager::create(c, nullptr);
  assert_non_null(pm.get());
  assert_false(pm->tuning());
  assert_false(pm->record_step(1000, 0.01));
  assert_false(pm->finish());
  assert_int_equal(pm->params().fusion_threshold, 1 * MiB);
  assert_true(pm->params().cycle_time_ms == 10);
}

// With only switches free the space is finite: each combination once, then the best.
void finite_space_is_enumerated(void**) {
  TunerConfig c = poor_start();
  c.fixed_fusion_threshold = c.fixed_cycle_time = true;
  c.fixed_cache = false;
  c.fixed_hierarchical_allreduce = false;
  auto score = [](const TunedParams& p) {
    return 1e9 * (p.cache_enabled ? 1.0 : 0.5) * (p.hierarchical_allreduce ? 0.8 : 1.0);
  };
  auto pm = ParameterManager::create(c, nullptr);
  drive(*pm, score);
  assert_int_equal(pm->samples().size(), 4);
  assert_true(pm->params().cache_enabled);
  assert_false(pm->params().hierarchical_allreduce);
}

// Warm-up samples are not scored; the first scored sample is the starting point; a
// change comes only after warm-up + one sample; the steps after a change are skipped.
void warm_up_and_windows(void**) {
  TunerConfig c = poor_start();
  c.warmup_samples = 2;
  c.steps_per_sample = 4;
  c.windows_per_sample = 3;
  c.settle_steps = 1;
  auto pm = ParameterManager::create(c, nullptr);
  const int64_t per_sample = c.steps_per_sample * c.windows_per_sample;
  int64_t step = 0;
  for (; step < (c.warmup_samples + 1) * per_sample - 1; ++step) {
    // Warm-up steps are slow (a compiler, a cold cache): they must not count.
    double bytes = step < c.warmup_samples * per_sample ? 1e3 : 1e6;
    assert_false(pm->record_step(static_cast<int64_t>(bytes), 0.01));
  }
  assert_int_equal(pm->samples().size(), 0);
  assert_true(pm->record_step(1000000, 0.01));  // the last step of the first sample
  assert_int_equal(pm->samples().size(), 1);
  assert_true(pm->samples()[0].params.fusion_threshold == 1 * MiB);
  assert_true(std::fabs(pm->samples()[0].score - 1e8) < 1);
  assert_int_equal(pm->params().generation, 1);
  assert_true(pm->params().tuning);

  // The next sample: one settle step (ignored even if absurd), then three windows of
  // four steps with one outlier window that the median drops.
  assert_false(pm->record_step(1, 100.0));
  for (int w = 0; w < 3; ++w)
    for (int s = 0; s < 4; ++s) {
      double bytes = w == 1 ? 1e9 : 2e6;
      bool changed = pm->record_step(static_cast<int64_t>(bytes), 0.01);
      assert_true(changed == (w == 2 && s == 3));
    }
  assert_int_equal(pm->samples().size(), 2);
  assert_true(std::fabs(pm->samples()[1].score - 2e8) < 1);
  // Steps that are not measurements are ignored.
  assert_false(pm->record_step(-5, 0.01));
  assert_false(pm->record_step(5, NAN));
  assert_false(pm->record_step(5, -1));
}

void same_seed_same_search(void**) {
  TunerConfig c = poor_start();
  c.fixed_cache = false;
  auto a = ParameterManager::create(c, nullptr);
  auto b = ParameterManager::create(c, nullptr);
  drive(*a, smooth_peak, 0.1);
  drive(*b, smooth_peak, 0.1);
  assert_int_equal(a->samples().size(), b->samples().size());
  for (size_t i = 0; i < a->samples().size(); ++i)
    assert_true(a->samples()[i].params == b->samples()[i].params);
  c.seed = 7;
  auto other = ParameterManager::create(c, nullptr);
  drive(*other, smooth_peak, 0.1);
  bool differs = false;
  for (size_t i = 0; i < other->samples().size(); ++i)
    differs |= !(other->samples()[i].params == a->samples()[i].params);
  assert_true(differs);
}

void generations_and_the_final_change(void**) {
  TunerConfig c = poor_start();
  c.max_samples = 6;
  auto pm = ParameterManager::create(c, nullptr);
  uint32_t last = pm->params().generation;
  int changes = 0;
  for (int64_t step = 0; pm->tuning(); ++step) {
    if (pm->record_step(static_cast<int64_t>(smooth_peak(pm->params()) * 0.01), 0.01)) {
      ++changes;
      assert_int_equal(pm->params().generation, last + 1);
      last = pm->params().generation;
    }
  }
  assert_int_equal(changes, 6);  // five moves and the final choice
  assert_false(pm->params().tuning);
  uint8_t wire[kTunedParamsWireSize];
  encode_tuned_params(pm->params(), wire);
  TunedParams received;
  assert_true(decode_tuned_params(wire, sizeof wire, &received));
  assert_true(received == pm->params());
}

void finish_early(void**) {
  TunerConfig c = poor_start();
  c.warmup_samples = 0;
  c.steps_per_sample = 1;
  c.windows_per_sample = 1;
  auto pm = ParameterManager::create(c, nullptr);
  assert_true(pm->finish());  // nothing measured: the starting point
  assert_false(pm->tuning());
  assert_int_equal(pm->params().fusion_threshold, 1 * MiB);
  assert_false(pm->finish());

  pm = ParameterManager::create(c, nullptr);
  for (int i = 0; i < 5; ++i)
    pm->record_step(static_cast<int64_t>(smooth_peak(pm->params()) * 0.01), 0.01);
  assert_true(pm->tuning());
  assert_true(pm->finish());
  assert_false(pm->tuning());
  double best = 0;
  for (const auto& s : pm->samples()) best = std::max(best, smooth_peak(s.params));
  assert_true(smooth_peak(pm->params()) == best);
}

// What fn writes to stderr (through a file, so that nothing is lost in a pipe).
std::string stderr_of(const std::function<void()>& fn) {
  std::string path = g_dir + "/stderr.txt";
  std::fflush(stderr);
  int saved = dup(2);
  FILE* f = std::fopen(path.c_str(), "w");
  dup2(fileno(f), 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::fclose(f);
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A job too short for one sample leaves a log with only its header: shutdown says so,
// with the steps a sample needs; a log with samples gets no such line.
void empty_log_says_why(void**) {
  set_log_level(LogLevel::Warning);
  std::string path = g_dir + "/short.csv";
  TunerConfig c = poor_start();
  c.log_path = path;
  c.warmup_samples = 3;
  c.steps_per_sample = 10;
  c.windows_per_sample = 3;
  auto pm = ParameterManager::create(c, nullptr);
  assert_non_null(pm.get());
  assert_int_equal(pm->steps_per_sample(), 30);
  assert_int_equal(pm->steps_before_first_sample(), 120);
  for (int i = 0; i < 7; ++i) pm->record_step(1000, 0.01);
  std::string said = stderr_of([&] { pm->finish(); });
  assert_int_equal(read_lines(path).size(), 1);
  const std::string want = "autotune: the log '" + path +
                           "' has no sample: the job ended after 7 steps, and the first "
                           "sample needs 120 (3 warm-up and 1 measured, 30 steps each: "
                           "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE=10 times 3 windows)";
  assert_true(said.find(want) != std::string::npos);
  assert_int_equal(std::count(said.begin(), said.end(), '\n'), 1);

  c.warmup_samples = 0;
  c.steps_per_sample = 1;
  c.windows_per_sample = 1;
  pm = ParameterManager::create(c, nullptr);
  for (int i = 0; i < 3; ++i) pm->record_step(1000, 0.01);
  said = stderr_of([&] { pm->finish(); });
  assert_true(read_lines(path).size() > 1);
  assert_true(said.find("has no sample") == std::string::npos);
}

void csv_log(void**) {
  std::string path = g_dir + "/autotune.csv";
  TunerConfig c = poor_start();
  c.fixed_cache = false;
  c.log_path = path;
  c.max_samples = 8;
  auto pm = ParameterManager::create(c, nullptr);
  assert_non_null(pm.get());
  // A job that ends early: the rows so far are in the file, flushed.
  int64_t step = 0;
  while (pm->samples().size() < 3) {
    pm->record_step(static_cast<int64_t>(smooth_peak(pm->params()) * 0.01), 0.01);
    ++step;
  }
  std::vector<std::string> early = read_lines(path);
  assert_int_equal(early.size(), 4);
  assert_string_equal(early[0].c_str(), TuneLog::kHeader);
  assert_string_equal(early[0].c_str(),
                      "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,"
                      "cache_enabled,cycle_time_ms,tensor_fusion_threshold,score");
  // The first sample is the starting point: 1 MiB, 10 ms, cache on.
  assert_string_equal(early[1].substr(0, 13).c_str(), "0,0,0,1,10,1,");

  drive(*pm, smooth_peak);
  std::vector<std::string> rows = read_lines(path);
  assert_int_equal(rows.size(), 1 + pm->samples().size() + 1);
  for (size_t i = 1; i < rows.size(); ++i) {
    std::vector<std::string> f = split(rows[i], ',');
    assert_int_equal(f.size(), 7);
    for (int b = 0; b < 4; ++b) assert_true(f[static_cast<size_t>(b)] == "0" || f[static_cast<size_t>(b)] == "1");
    assert_true(std::strtod(f[4].c_str(), nullptr) > 0);
    assert_true(std::strtod(f[5].c_str(), nullptr) > 0);
    assert_true(std::strtod(f[6].c_str(), nullptr) > 0);
  }
  // The last row is the chosen setting, in MiB.
  std::vector<std::string> last = split(rows.back(), ',');
  const TunedParams& p = pm->params();
  assert_true(std::fabs(std::strtod(last[4].c_str(), nullptr) - p.cycle_time_ms) < 1e-9);
  double mib = static_cast<double>(p.fusion_threshold) / MiB;
  assert_true(std::fabs(std::strtod(last[5].c_str(), nullptr) - mib) < 1e-4 * mib);
  assert_true(last[3] == (p.cache_enabled ? "1" : "0"));
}

// Steps end when a name returns, whatever order the tensors come in.
void steps_end_when_a_name_returns(void**) {
  StepDetector d;
  const char* step1[] = {"c", "a", "b"};
  const char* step2[] = {"a", "c", "b"};
  for (const char* n : step1) assert_false(d.observe(n));
  assert_true(d.observe(step2[0]));
  assert_false(d.observe(step2[1]));
  assert_false(d.observe(step2[2]));
  assert_true(d.observe("b"));  // a one-tensor step: b again
  d.reset();
  assert_false(d.observe("b"));
}

// Tensors read from the response cache are known by their slot: the same boundaries as
// by name, also while tensors move between the two ways and when a slot changes tensor.
void steps_seen_through_cache_slots(void**) {
  StepDetector d;
  auto observe = [&](const char* name, int slot) { return d.observe(name, hash_key(name), slot); };
  // Step 1 by name (negotiated), step 2 from the cache, step 3 with b by name again.
  assert_false(observe("a", -1));
  assert_false(observe("b", -1));
  assert_true(observe("a", 0));
  assert_false(observe("b", 1));
  assert_true(observe("a", 0));
  assert_false(observe("b", -1));
  // Slot 1 now holds c: not b seen again, so no boundary; a's return still is one.
  assert_false(observe("c", 1));
  assert_true(observe("a", 0));
  assert_false(observe("b", -1));
  assert_false(observe("c", 1));
  assert_true(observe("c", 1));  // c twice in a step: the next begins
}

// Names that never come back (automatic names count up) do not pile up, and pruning
// them changes no step boundary.
void steps_forget_names_that_stop_coming(void**) {
  StepDetector d;
  int boundaries = 0;
  for (int step = 0; step < 50; ++step) {
    for (int t = 0; t < 3; ++t) boundaries += d.observe("grad." + std::to_string(t));
    for (int t = 0; t < 100; ++t) boundaries += d.observe("auto." + std::to_string(step * 100 + t));
  }
  assert_int_equal(boundaries, 49);  // every step after the first begins at grad.0
  assert_true(d.tracked() <= 2 * 103 + 1024 + 103);
}

void invalid_configs_are_errors(void**) {
  struct Case {
    void (*edit)(TunerConfig&);
    const char* says;
  };
  const Case cases[] = {
      {[](TunerConfig& c) { c.warmup_samples = -1; }, "WARMUP_SAMPLES"},
      {[](TunerConfig& c) { c.steps_per_sample = 0; }, "STEPS_PER_SAMPLE"},
      {[](TunerConfig& c) { c.max_samples = 0; }, "MAX_SAMPLES"},
      {[](TunerConfig& c) { c.max_samples = 201; }, "MAX_SAMPLES must be 1 to 200"},
      {[](TunerConfig& c) { c.gaussian_process_noise = -0.1; }, "NOISE"},
      {[](TunerConfig& c) { c.gaussian_process_noise = INFINITY; }, "NOISE"},
      {[](TunerConfig& c) { c.windows_per_sample = 0; }, "window"},
      {[](TunerConfig& c) { c.fusion_threshold_min = 0; }, "threshold range"},
      {[](TunerConfig& c) { c.fusion_threshold_max = c.fusion_threshold_min - 1; }, "threshold range"},
      {[](TunerConfig& c) { c.cycle_time_max_ms = NAN; }, "cycle time range"},
      {[](TunerConfig& c) { c.initial.fusion_threshold = -1; }, "initial fusion"},
      {[](TunerConfig& c) { c.initial.cycle_time_ms = -1; }, "initial cycle"},
      {[](TunerConfig& c) { c.log_path = "/nonexistent-dir/autotune.csv"; }, "/nonexistent-dir"},
  };
  for (const Case& k : cases) {
    TunerConfig c = poor_start();
    k.edit(c);
    std::string error;
    assert_null(ParameterManager::create(c, &error).get());
    if (error.find(k.says) == std::string::npos)
      fail_msg("error '%s' does not mention '%s'", error.c_str(), k.says);
  }
  // A start outside the box (fusion off) still works: it is measured where it is.
  TunerConfig c = poor_start();
  c.initial.fusion_threshold = 0;
  auto pm = ParameterManager::create(c, nullptr);
  assert_non_null(pm.get());
  drive(*pm, smooth_peak);
  assert_true(pm->samples()[0].params.fusion_threshold == 0);
  assert_true(smooth_peak(pm->params()) >= 0.9 * kSmoothPeakBest);
}

}  // namespace

int main() {
  char dir[] = "/tmp/hvd-tune-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  g_dir = dir;
  const CMUnitTest tests[] = {
      cmocka_unit_test(wire_form_round_trips),
      cmocka_unit_test(gaussian_process_fits_and_doubts),
      cmocka_unit_test(finds_a_smooth_peak),
      cmocka_unit_test(finds_a_peak_through_noise),
      cmocka_unit_test(heavy_noise_keeps_a_measured_good_point),
      cmocka_unit_test(finds_a_narrow_peak),
      cmocka_unit_test(finds_a_corner),
      cmocka_unit_test(finds_the_right_switches),
      cmocka_unit_test(turns_the_cache_off_when_that_pays),
      cmocka_unit_test(keeps_the_cache_when_it_pays),
      cmocka_unit_test(holds_a_cache_that_is_off),
      cmocka_unit_test(holds_fixed_knobs),
      cmocka_unit_test(nothing_free_means_no_tuning),
      cmocka_unit_test(finite_space_is_enumerated),
      cmocka_unit_test(warm_up_and_windows),
      cmocka_unit_test(same_seed_same_search),
      cmocka_unit_test(generations_and_the_final_change),
      cmocka_unit_test(finish_early),
      cmocka_unit_test(tiny_budgets),
      cmocka_unit_test(csv_log),
      cmocka_unit_test(empty_log_says_why),
      cmocka_unit_test(steps_end_when_a_name_returns),
      cmocka_unit_test(steps_seen_through_cache_slots),
      cmocka_unit_test(steps_forget_names_that_stop_coming),
      cmocka_unit_test(invalid_configs_are_errors),
  };
  int failed = cmocka_run_group_tests_name("tune", tests, nullptr, nullptr);
  if (failed == 0) std::system(("rm -rf '" + g_dir + "'").c_str());
  return failed;
}
