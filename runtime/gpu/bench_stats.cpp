// runtime/gpu/bench_stats.cpp — quantiles by linear interpolation between ranks, and their summary.
#include "runtime/gpu/bench_stats.h"

#include <algorithm>
#include <cmath>

namespace dsv41::gpu {

double quantile(const std::vector<double>& sorted, double q) {
  DSV41_CHECK(!sorted.empty() && q >= 0 && q <= 1);
  const double position = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double t = position - static_cast<double>(below);
  return sorted[below] + t * (sorted[above] - sorted[below]);
}

Result<TimeStats> time_stats(std::vector<double> samples) {
  if (samples.empty()) return Status::error("timings: no sample (at least 1 replay is needed)");
  for (size_t i = 0; i < samples.size(); ++i)
    if (!std::isfinite(samples[i]) || samples[i] < 0)
      return Status::errorf("timings: sample {} is {}, expected a finite value >= 0", i, samples[i]);
  std::sort(samples.begin(), samples.end());
  TimeStats s;
  s.count = static_cast<int>(samples.size());
  s.median = quantile(samples, 0.5);
  s.p10 = quantile(samples, 0.1);
  s.p90 = quantile(samples, 0.9);
  s.min = samples.front();
  s.max = samples.back();
  return s;
}

}  // namespace dsv41::gpu
