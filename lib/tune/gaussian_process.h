// Gaussian-process regression for the autotuner: a Matern 5/2 kernel over inputs in
// the unit box, scores standardised to mean 0 and variance 1, two length scales (one
// for the continuous coordinates, one for the 0/1 coordinates that follow them: how
// much one algorithm's measurements say about another's) and the noise level, each
// chosen from a fixed set to maximise the marginal likelihood. The problems are tiny (tens of
// points), so a dense Cholesky factorisation is all it needs.
#pragma once

#include <vector>

namespace hvd {

class GaussianProcess {
 public:
  // Coordinates from `continuous` on are 0/1 switches.
  explicit GaussianProcess(int continuous = 1 << 30) : continuous_(continuous) {}

  // max_noise: the largest measurement-noise variance the model may assume, in units
  // of the standardised scores' variance (0.8: the measurements may be nearly as noisy
  // as the spread of the scores); the likeliest level up to it is used. x: points of
  // equal dimension; y: their scores.
  void fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
           double max_noise);

  // Posterior mean and variance of the noise-free score at x, in the units of y.
  void predict(const std::vector<double>& x, double* mean, double* variance) const;

  bool fitted() const { return !x_.empty(); }
  double length_scale() const { return length_; }
  double switch_length_scale() const { return switch_length_; }
  double noise() const { return noise_; }

 private:
  double kernel(const std::vector<double>& a, const std::vector<double>& b) const;
  // Factorises K + noise I for the current length scale into chol_; returns the log
  // marginal likelihood of the standardised scores.
  double factorize(const std::vector<double>& z);

  std::vector<std::vector<double>> x_;
  std::vector<double> chol_;   // lower triangle, row-major n x n
  std::vector<double> alpha_;  // (K + noise I)^-1 z
  int continuous_;
  int choice_[3] = {-1, -1, -1};  // last chosen length, switch length and noise indices
  double y_mean_ = 0, y_std_ = 1, length_ = 0.3, switch_length_ = 1, noise_ = 0;
};

// Standard normal density and distribution.
double normal_pdf(double z);
double normal_cdf(double z);

// Expected improvement over best for a maximised score with posterior mean and
// variance at a point; xi is a small margin that favours exploration.
double expected_improvement(double mean, double variance, double best, double xi);

}  // namespace hvd
