// runtime/serve/metrics.h — the server's counters, gauges and histograms, rendered as Prometheus text for /metrics.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace dsv41::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double seconds);
  // `name`_bucket{le=...}, _sum and _count lines.
  std::string render(const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct Metrics {
  Metrics();
  void count_request(const std::string& endpoint, int status);
  std::string render() const;

  std::atomic<uint64_t> prompt_tokens{0}, generated_tokens{0}, padding_rows{0}, rounds{0};
  std::atomic<int64_t> slots_busy{0}, queue_depth{0};
  Histogram time_to_first_token, inter_token;
  // Drafting: verified rounds, drafts proposed and kept; each request's acceptance length (tokens a
  // round yields: kept drafts + 1) observed when it ends.
  std::atomic<uint64_t> draft_rounds{0}, drafted_tokens{0}, accepted_tokens{0};
  Histogram acceptance_length;

  // Runs of each phase (a CUDA graph replay on the GPU backend).
  void count_phase(const std::string& phase);

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> phase_runs_;
};

}  // namespace dsv41::serve
