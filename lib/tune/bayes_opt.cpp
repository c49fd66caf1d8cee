#include "tune/bayes_opt.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace hvd {

namespace {

constexpr int kRandomStarts = 128;
constexpr int kRefinedStarts = 3;
constexpr size_t kSeedPoints = 8;
constexpr int kMaxEnumeratedBinary = 6;  // 64 combinations; beyond, a random subset
constexpr double kExplorationMargin = 0.01;

}  // namespace

uint64_t TuneRandom::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double TuneRandom::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

BayesianOptimizer::BayesianOptimizer(int continuous, int binary, double noise, uint64_t seed)
    : continuous_(continuous), binary_(binary), noise_(noise), rng_(seed), gp_(continuous) {}

std::vector<double> BayesianOptimizer::random_point() {
  std::vector<double> x(static_cast<size_t>(dims()));
  for (int i = 0; i < continuous_; ++i) x[static_cast<size_t>(i)] = rng_.uniform();
  for (int i = continuous_; i < dims(); ++i) x[static_cast<size_t>(i)] = rng_.below(2) ? 1.0 : 0.0;
  return x;
}

std::vector<std::vector<double>> BayesianOptimizer::initial_design(int n) {
  std::vector<std::vector<double>> design(static_cast<size_t>(std::max(n, 0)),
                                          std::vector<double>(static_cast<size_t>(dims())));
  if (n <= 0) return design;
  std::vector<size_t> order(static_cast<size_t>(n));
  for (int d = 0; d < dims(); ++d) {
    std::iota(order.begin(), order.end(), 0);
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng_.below(i)]);
    for (int i = 0; i < n; ++i) {
      size_t stratum = order[static_cast<size_t>(i)];
      design[static_cast<size_t>(i)][static_cast<size_t>(d)] =
          d < continuous_ ? (static_cast<double>(stratum) + rng_.uniform()) / n
                          : static_cast<double>(stratum % 2);
    }
  }
  return design;
}

void BayesianOptimizer::add_sample(const std::vector<double>& x, double score) {
  x_.push_back(x);
  y_.push_back(score);
  // The model sees log scores: a switch that makes everything 20% faster is then the
  // same curve shifted, which the GP can carry from one algorithm to the other, and
  // relative noise has the same size everywhere.
  double top = 0;
  for (double v : y_) top = std::max(top, v);
  const double floor = top > 0 ? top * 1e-9 : 1e-300;
  std::vector<double> logs(y_.size());
  for (size_t i = 0; i < y_.size(); ++i) logs[i] = std::log(std::max(y_[i], floor));
  gp_.fit(x_, logs, noise_);
}

double BayesianOptimizer::ei_at(const std::vector<double>& x, double best) const {
  double mean, variance;
  gp_.predict(x, &mean, &variance);
  return expected_improvement(mean, variance, best, kExplorationMargin * std::sqrt(variance));
}

void BayesianOptimizer::refine(std::vector<double>* x, double* value, double best) const {
  for (double step = 0.1; step >= 1e-3; step /= 2) {
    bool improved = true;
    while (improved) {
      improved = false;
      for (int d = 0; d < continuous_; ++d) {
        for (double sign : {1.0, -1.0}) {
          std::vector<double> y = *x;
          double& c = y[static_cast<size_t>(d)];
          c = std::clamp(c + sign * step, 0.0, 1.0);
          if (c == (*x)[static_cast<size_t>(d)]) continue;
          double v = ei_at(y, best);
          if (v > *value) {
            *x = std::move(y);
            *value = v;
            improved = true;
          }
        }
      }
    }
  }
}

int BayesianOptimizer::best_index() {
  if (y_.empty()) return -1;
  std::vector<double> sorted = y_;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(sorted.size() / 2), sorted.end());
  const double median = sorted[sorted.size() / 2];
  int best = 0;
  double best_mean = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < x_.size(); ++i) {
    if (y_[i] < median) continue;
    double mean, variance;
    gp_.predict(x_[i], &mean, &variance);
    if (mean > best_mean) {
      best_mean = mean;
      best = static_cast<int>(i);
    }
  }
  return best;
}

std::vector<double> BayesianOptimizer::next_point() {
  if (y_.empty()) return random_point();
  // Improvement is measured against the best posterior mean, not the best raw score,
  // so one lucky measurement does not stop the search.
  double best = -std::numeric_limits<double>::infinity();
  for (const auto& x : x_) {
    double mean, variance;
    gp_.predict(x, &mean, &variance);
    best = std::max(best, mean);
  }

  // The best measured points seed the search: the optimum is often near one.
  std::vector<size_t> top(x_.size());
  std::iota(top.begin(), top.end(), 0);
  if (top.size() > kSeedPoints) {
    std::partial_sort(top.begin(), top.begin() + kSeedPoints, top.end(),
                      [&](size_t a, size_t b) { return y_[a] > y_[b]; });
    top.resize(kSeedPoints);
  }

  std::vector<std::vector<double>> combos;
  if (binary_ <= kMaxEnumeratedBinary) {
    for (uint32_t bits = 0; bits < (1u << binary_); ++bits) {
      std::vector<double> c(static_cast<size_t>(binary_));
      for (int b = 0; b < binary_; ++b) c[static_cast<size_t>(b)] = (bits >> b) & 1;
      combos.push_back(c);
    }
  } else {
    for (int i = 0; i < 64; ++i) {
      std::vector<double> p = random_point();
      combos.emplace_back(p.begin() + continuous_, p.end());
    }
  }

  std::vector<double> best_x;
  double best_value = -1;
  for (const std::vector<double>& combo : combos) {
    struct Start {
      double value;
      std::vector<double> x;
    };
    std::vector<Start> starts;
    auto consider = [&](std::vector<double> x) {
      std::copy(combo.begin(), combo.end(), x.begin() + continuous_);
      double v = ei_at(x, best);
      starts.push_back({v, std::move(x)});
    };
    if (continuous_ == 0) {
      consider(std::vector<double>(static_cast<size_t>(dims())));
    } else {
      for (int i = 0; i < kRandomStarts; ++i) consider(random_point());
      for (size_t i : top) consider(x_[i]);  // the neighbourhoods of the best measured
    }
    size_t keep = std::min<size_t>(kRefinedStarts, starts.size());
    std::partial_sort(starts.begin(), starts.begin() + static_cast<long>(keep), starts.end(),
                      [](const Start& a, const Start& b) { return a.value > b.value; });
    for (size_t i = 0; i < keep; ++i) {
      if (continuous_ > 0) refine(&starts[i].x, &starts[i].value, best);
      if (starts[i].value > best_value) {
        best_value = starts[i].value;
        best_x = starts[i].x;
      }
    }
  }
  return best_x;
}

}  // namespace hvd
