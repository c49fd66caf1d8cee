#include "stats.h"

#include <algorithm>

namespace hvdbench {

Stats summarize(std::vector<double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  size_t n = samples.size();
  s.median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  s.min = samples.front();
  s.max = samples.back();
  return s;
}

Stats scaled(const Stats& s, double factor) {
  return Stats{s.median * factor, s.min * factor, s.max * factor};
}

}  // namespace hvdbench
