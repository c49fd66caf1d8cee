#include "tune/gaussian_process.h"

#include <algorithm>
#include <iterator>
#include <cmath>
#include <limits>

namespace hvd {

namespace {

constexpr double kLengthScales[] = {0.08, 0.12, 0.18, 0.25, 0.35, 0.5, 0.7, 1.0, 1.5};
// For the switches, whose coordinates differ by 0 or 1: from "unrelated" to "the same
// curve shifted".
constexpr double kSwitchLengthScales[] = {0.5, 1.0, 2.0, 4.0};
// Candidate noise variances (standardised units), up to the configured maximum.
constexpr double kNoiseLevels[] = {1e-4, 1e-3, 0.01, 0.03, 0.1, 0.3};
// Up to this many points every combination of the above is tried.
constexpr size_t kFullSearchPoints = 30;
// Added to the diagonal so that the factorisation survives duplicate points with no
// noise.
constexpr double kJitter = 1e-8;

}  // namespace

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); }
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double expected_improvement(double mean, double variance, double best, double xi) {
  double sigma = std::sqrt(std::max(variance, 0.0));
  double gain = mean - best - xi;
  if (sigma < 1e-12) return std::max(gain, 0.0);
  double z = gain / sigma;
  return gain * normal_cdf(z) + sigma * normal_pdf(z);
}

double GaussianProcess::kernel(const std::vector<double>& a, const std::vector<double>& b) const {
  double d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = (a[i] - b[i]) / (static_cast<int>(i) < continuous_ ? length_ : switch_length_);
    d2 += d * d;
  }
  double r = std::sqrt(5.0 * d2);
  return (1 + r + r * r / 3) * std::exp(-r);
}

double GaussianProcess::factorize(const std::vector<double>& z) {
  const size_t n = x_.size();
  chol_.assign(n * n, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j <= i; ++j)
      chol_[i * n + j] = kernel(x_[i], x_[j]) + (i == j ? noise_ + kJitter : 0.0);
  // In-place Cholesky: K = L L^T.
  for (size_t j = 0; j < n; ++j) {
    double d = chol_[j * n + j];
    for (size_t k = 0; k < j; ++k) d -= chol_[j * n + k] * chol_[j * n + k];
    if (d <= 0) return -std::numeric_limits<double>::infinity();
    d = std::sqrt(d);
    chol_[j * n + j] = d;
    for (size_t i = j + 1; i < n; ++i) {
      double s = chol_[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= chol_[i * n + k] * chol_[j * n + k];
      chol_[i * n + j] = s / d;
    }
  }
  // alpha = L^-T L^-1 z.
  std::vector<double> w(z);
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < i; ++k) w[i] -= chol_[i * n + k] * w[k];
    w[i] /= chol_[i * n + i];
  }
  double fit_term = 0, log_det = 0;
  for (size_t i = 0; i < n; ++i) {
    fit_term += w[i] * w[i];
    log_det += std::log(chol_[i * n + i]);
  }
  alpha_ = w;
  for (size_t i = n; i-- > 0;) {
    for (size_t k = i + 1; k < n; ++k) alpha_[i] -= chol_[k * n + i] * alpha_[k];
    alpha_[i] /= chol_[i * n + i];
  }
  return -0.5 * fit_term - log_det - 0.5 * static_cast<double>(n) * std::log(2 * M_PI);
}

void GaussianProcess::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                          double max_noise) {
  x_ = x;
  const size_t n = y.size();
  y_mean_ = 0;
  for (double v : y) y_mean_ += v;
  y_mean_ /= static_cast<double>(n ? n : 1);
  double var = 0;
  for (double v : y) var += (v - y_mean_) * (v - y_mean_);
  y_std_ = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0;
  if (!(y_std_ > 0)) y_std_ = std::max(std::fabs(y_mean_), 1.0);
  std::vector<double> z(n);
  for (size_t i = 0; i < n; ++i) z[i] = (y[i] - y_mean_) / y_std_;

  std::vector<double> noises;
  for (double v : kNoiseLevels)
    if (v < max_noise) noises.push_back(v);
  noises.push_back(std::max(max_noise, 0.0));
  const int n_lengths = static_cast<int>(std::size(kLengthScales));
  const bool has_switches = !x.empty() && static_cast<int>(x[0].size()) > continuous_;
  const int n_switch = has_switches ? static_cast<int>(std::size(kSwitchLengthScales)) : 1;
  const int n_noise = static_cast<int>(noises.size());

  // Each choice costs a factorisation, cubic in the points: with many points only the
  // neighbours of the last choice are tried (the likelihood moves little per point).
  int lo[3] = {0, 0, 0}, hi[3] = {n_lengths - 1, n_switch - 1, n_noise - 1};
  const int choice[3] = {choice_[0], choice_[1], choice_[2]};
  if (n > kFullSearchPoints && choice[0] >= 0) {
    for (int k = 0; k < 3; ++k) {
      lo[k] = std::max(lo[k], std::min(choice[k], hi[k]) - 1);
      hi[k] = std::min(hi[k], choice[k] + 1);
    }
  }
  double best_ll = -std::numeric_limits<double>::infinity();
  int best[3] = {std::min(3, hi[0]), std::min(1, hi[1]), hi[2]};
  for (int ni = lo[2]; ni <= hi[2]; ++ni) {
    for (int li = lo[0]; li <= hi[0]; ++li) {
      for (int si = lo[1]; si <= hi[1]; ++si) {
        length_ = kLengthScales[li];
        switch_length_ = kSwitchLengthScales[si];
        noise_ = noises[static_cast<size_t>(ni)];
        double ll = factorize(z);
        if (ll > best_ll) {
          best_ll = ll;
          best[0] = li;
          best[1] = si;
          best[2] = ni;
        }
      }
    }
  }
  for (int k = 0; k < 3; ++k) choice_[k] = best[k];
  length_ = kLengthScales[best[0]];
  switch_length_ = kSwitchLengthScales[best[1]];
  noise_ = noises[static_cast<size_t>(best[2])];
  factorize(z);
}

void GaussianProcess::predict(const std::vector<double>& x, double* mean,
                              double* variance) const {
  const size_t n = x_.size();
  if (n == 0) {
    *mean = 0;
    *variance = 1;
    return;
  }
  std::vector<double> k(n);
  double m = 0;
  for (size_t i = 0; i < n; ++i) {
    k[i] = kernel(x_[i], x);
    m += k[i] * alpha_[i];
  }
  // v = L^-1 k; variance = k(x, x) - v.v
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) k[i] -= chol_[i * n + j] * k[j];
    k[i] /= chol_[i * n + i];
  }
  double v = 1.0;
  for (size_t i = 0; i < n; ++i) v -= k[i] * k[i];
  *mean = y_mean_ + y_std_ * m;
  *variance = std::max(v, 1e-12) * y_std_ * y_std_;
}

}  // namespace hvd
