// Times and their summary. Every figure hvd-bench prints is a median over
// repetitions, with the fastest and slowest beside it.
#pragma once

#include <chrono>
#include <vector>

namespace hvdbench {

struct Stats {
  double median = 0;
  double min = 0;
  double max = 0;
};

// Summary of samples (an even count takes the mean of the middle two). Empty: zeros.
Stats summarize(std::vector<double> samples);

Stats scaled(const Stats& s, double factor);

// Seconds on a monotonic clock.
inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace hvdbench
