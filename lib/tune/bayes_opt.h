// Bayesian optimisation over a unit box with some 0/1 coordinates: a Gaussian process
// models the logarithm of the (positive) score, and the next point is the one of highest expected improvement.
// The 0/1 coordinates (algorithm choices) are enumerated; the continuous ones are
// searched from random starts refined by a pattern search. Deterministic for a seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tune/gaussian_process.h"

namespace hvd {

// splitmix64: the same seed gives the same search with any compiler or library.
class TuneRandom {
 public:
  explicit TuneRandom(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();  // [0, 1)
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }

 private:
  uint64_t state_;
};

class BayesianOptimizer {
 public:
  // A point is `continuous` coordinates in [0, 1] followed by `binary` ones in {0, 1}.
  BayesianOptimizer(int continuous, int binary, double noise, uint64_t seed);

  int dims() const { return continuous_ + binary_; }

  // n points spread over the box: a Latin hypercube on the continuous coordinates and
  // each value of each binary coordinate about equally often.
  std::vector<std::vector<double>> initial_design(int n);

  void add_sample(const std::vector<double>& x, double score);

  // The point of highest expected improvement (a random one before any sample).
  std::vector<double> next_point();

  // Among the sampled points that scored at least the median of all samples
  // themselves, the one whose posterior mean is highest: good and not merely lucky
  // (the mean), and not a point the model only extrapolates to be good while its own
  // measurements were poor (the median filter: under heavy noise the posterior can
  // follow a trend out to a corner of the range). -1 before any sample.
  int best_index();

  const std::vector<std::vector<double>>& points() const { return x_; }
  const std::vector<double>& scores() const { return y_; }

 private:
  double ei_at(const std::vector<double>& x, double best) const;
  std::vector<double> random_point();
  // Pattern search on the continuous coordinates from x, improving *value in place.
  void refine(std::vector<double>* x, double* value, double best) const;

  int continuous_, binary_;
  double noise_;
  TuneRandom rng_;
  GaussianProcess gp_;
  std::vector<std::vector<double>> x_;
  std::vector<double> y_;
};

}  // namespace hvd
