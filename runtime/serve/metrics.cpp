// runtime/serve/metrics.cpp — histogram buckets and the Prometheus text exposition.
#include "runtime/serve/metrics.h"

#include <fmt/format.h>

namespace dsv41::serve {

void Histogram::observe(double seconds) {
  std::lock_guard lock(mutex_);
  size_t i = 0;
  while (i < bounds_.size() && seconds > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::lock_guard lock(mutex_);
  std::string out = fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, sum_, name, count_);
  return out;
}

Metrics::Metrics()
    : time_to_first_token({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      inter_token({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}),
      acceptance_length({1, 1.25, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6}) {}

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{endpoint, status}];
}

void Metrics::count_phase(const std::string& phase) {
  std::lock_guard lock(mutex_);
  ++phase_runs_[phase];
}

std::string Metrics::render() const {
  std::string out = "# HELP dsv41_requests_total HTTP requests answered, by endpoint and status.\n"
                    "# TYPE dsv41_requests_total counter\n";
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, n] : requests_)
      out += fmt::format("dsv41_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, n);
    out += "# HELP dsv41_phase_runs_total Runs (graph replays) of each phase.\n# TYPE dsv41_phase_runs_total counter\n";
    for (const auto& [phase, n] : phase_runs_) out += fmt::format("dsv41_phase_runs_total{{phase=\"{}\"}} {}\n", phase, n);
  }
  auto line = [&](const char* name, const char* type, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
  };
  line("dsv41_prompt_tokens_total", "counter", "Prompt tokens prefilled.", prompt_tokens.load());
  line("dsv41_generated_tokens_total", "counter", "Tokens generated.", generated_tokens.load());
  line("dsv41_padding_rows_total", "counter", "Phase rows run as padding (bucket rows beyond the active ones).", padding_rows.load());
  line("dsv41_rounds_total", "counter", "Scheduler rounds run.", rounds.load());
  line("dsv41_slots_busy", "gauge", "Slots holding a sequence.", slots_busy.load());
  line("dsv41_queue_depth", "gauge", "Admitted requests waiting for a slot.", queue_depth.load());
  line("dsv41_draft_rounds_total", "counter", "Drafted rounds verified (one per decoding sequence and round).",
       draft_rounds.load());
  line("dsv41_drafted_tokens_total", "counter", "Draft tokens proposed for verification.", drafted_tokens.load());
  line("dsv41_accepted_tokens_total", "counter", "Draft tokens verification kept.", accepted_tokens.load());
  const uint64_t rounds_drafted = draft_rounds.load();
  line("dsv41_acceptance_length", "gauge", "Tokens per drafted round overall: (accepted + rounds) / rounds (0: none yet).",
       rounds_drafted ? static_cast<double>(accepted_tokens.load() + rounds_drafted) / rounds_drafted : 0.0);
  out += acceptance_length.render("dsv41_request_acceptance_length",
                                  "Each drafted request's tokens per round, observed when it ends.");
  out += time_to_first_token.render("dsv41_time_to_first_token_seconds", "From admission to the first token.");
  out += inter_token.render("dsv41_inter_token_seconds", "Between consecutive tokens of a request.");
  return out;
}

}  // namespace dsv41::serve
