// runtime/gpu/bench_stats.h — the summary `dsv41-rt bench` gives of repeated timings: median, p10, p90.
#pragma once

#include <vector>

#include "common/status.h"

namespace dsv41::gpu {

struct TimeStats {
  int count = 0;
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;  // in the samples' unit
};

// The q-quantile (0 <= q <= 1) of `sorted` (ascending, not empty), interpolated linearly between the
// two nearest ranks: position q·(n−1), so the median of an even count is the mean of the middle two.
double quantile(const std::vector<double>& sorted, double q);

// Refuses an empty list, or a negative or non-finite sample (a timer that failed), naming its index.
Result<TimeStats> time_stats(std::vector<double> samples);

}  // namespace dsv41::gpu
