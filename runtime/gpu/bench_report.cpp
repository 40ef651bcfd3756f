// runtime/gpu/bench_report.cpp — the bench report as text tables and as JSON.
#include "runtime/gpu/bench_report.h"

#include <fmt/format.h>

namespace dsv41::gpu {
namespace {

nlohmann::json stats_json(const TimeStats& s) {
  return {{"count", s.count}, {"median", s.median}, {"p10", s.p10}, {"p90", s.p90}, {"min", s.min}, {"max", s.max}};
}

// The per-call-site rows of a phase: its products and every other op that reads weights, against the
// bytes' time at the run's roofline.
std::string sites_text(const PhaseMeasure& m, double roofline_gb_per_s) {
  std::string out = fmt::format("\n{}: per call site (calls naming weights; eager pass; roofline us: the site's bytes "
                                "at {:.0f} GB/s)\n", m.phase, roofline_gb_per_s);
  out += fmt::format("  {:<16} {:<44} {:>5} {:>9} {:>11} {:>11} {:>8} {:>9}\n", "op", "site", "calls", "MB a call",
                     "us a call", "roofline us", "ms", "roofline");
  for (const SiteTime& s : group_call_sites(m.calls)) {
    const double roof_us = roofline_gb_per_s > 0 ? s.bytes / roofline_gb_per_s * 1e-3 : 0;
    out += fmt::format("  {:<16} {:<44} {:>5} {:>9.2f} {:>11.2f} {:>11.2f} {:>8.3f} {:>8.1f}%\n", s.op, s.site, s.calls,
                       s.bytes / 1e6, 1e3 * s.median_ms, roof_us, s.ms,
                       s.median_ms > 0 ? 100 * roof_us / (1e3 * s.median_ms) : 0.0);
  }
  return out;
}

std::string logits_note(const BenchReport& r) {
  if (r.alone) return "not meaningful: the rank ran alone (its exchanges had no peers), so no logits or tokens are claimed";
  return r.with_peers ? fmt::format("computed as in serving (world {}: every rank a process, NCCL inside the graphs)", r.world)
                      : "computed as in serving (world 1)";
}

}  // namespace

std::string bench_text(const BenchReport& r) {
  std::string out = fmt::format("device      {}\nprogram     {} (rank {} of world {}{})\nweights     {}\n", r.device,
                                r.program, r.rank, r.world, r.alone ? ", run alone: the per-rank case" : "", r.weights);
  std::string stored;
  uint64_t total = 0;
  for (const auto& [format, bytes] : r.stored) {
    stored += fmt::format("{}{} {:.3f} GB", stored.empty() ? "" : ", ", format, bytes / 1e9);
    total += bytes;
  }
  out += fmt::format("on device   {:.3f} GB of weights ({})\n", total / 1e9, stored);
  out += fmt::format("logits      {}\n", logits_note(r));
  out += fmt::format("fill        {} cache entries before each row\n", r.fill);
  out += fmt::format("graphs      {}, {}\n", r.graph_lanes ? "two lanes (independent calls side by side)" : "one lane (--one-lane)",
                     r.programmatic_launch ? "programmatic dependent launch" : "no programmatic launch (--no-pdl)");
  out += fmt::format("roofline    {:.0f} GB/s: streaming read of {:.0f} MiB ({} blocks x {} threads, 16-byte loads), median "
                     "of {} ({:.3f} ms; best {:.0f} GB/s)\n\n",
                     r.roofline.gb_per_s, r.roofline.bytes / 1048576.0, r.roofline.blocks, r.roofline.threads,
                     r.roofline.ms.count, r.roofline.ms.median, r.roofline.best_gb_per_s);
  out += fmt::format("{:<16} {:>5} {:>10} {:>10} {:>10} {:>7} {:>11} {:>12} {:>8} {:>8} {:>9}\n", "phase", "rows",
                     "median ms", "p10 ms", "p90 ms", "replays", "tokens/s", "weights MB", "experts", "GB/s", "roofline");
  for (const PhaseMeasure& m : r.phases)
    if (!m.error.empty())
      out += fmt::format("{:<16} {:>5} failed: {}\n", m.phase, m.rows, m.error);
    else
      out += fmt::format("{:<16} {:>5} {:>10.3f} {:>10.3f} {:>10.3f} {:>7} {:>11.1f} {:>12.1f} {:>8} {:>8.0f} {:>8.1f}%\n",
                       m.phase, m.rows, m.ms.median, m.ms.p10, m.ms.p90, m.ms.count, m.tokens_per_s,
                       m.bytes.total() / 1e6, m.bytes.experts_read, m.gb_per_s, 100 * m.roofline_share);
  for (const PhaseMeasure& m : r.phases)
    if (m.exchanges > 0)
      out += fmt::format("{:<16} {:>5} exchanges: {} a step, {:.3f} ms in all ({:.1f} us each; eager pass, each NCCL "
                         "exchange synchronised before and after and host-timed, waiting for the peer included)\n",
                         m.phase, m.rows, m.exchanges, m.exchange_ms, 1e3 * m.exchange_ms / m.exchanges);
  out += "\nweights MB: the dense weights, the embedding rows of the step's tokens and the distinct routed experts its\n"
         "rows selected (experts: summed over the MoE layers; the router's ids read back in an eager pass).\n";
  for (const PhaseMeasure& m : r.phases) {
    if (m.ops.empty()) continue;
    out += fmt::format("\n{}: per call (eager pass, CUDA events around each launch): {:.3f} ms in all, against the "
                       "graph's {:.3f} ms\n", m.phase, m.eager_ms, m.ms.median);
    out += fmt::format("  {:<20} {:>6} {:>11} {:>11} {:>7}\n", "op", "calls", "ms", "ms a call", "share");
    for (const OpTime& t : m.ops)
      out += fmt::format("  {:<20} {:>6} {:>11.3f} {:>11.4f} {:>6.1f}%\n", t.op, t.calls, t.ms, t.ms / t.calls,
                         100 * t.share);
    if (!m.calls.empty()) out += sites_text(m, r.roofline.gb_per_s);
  }
  return out + draft_text(r);
}

nlohmann::json bench_json(const BenchReport& r) {
  nlohmann::json stored = nlohmann::json::object();
  for (const auto& [format, bytes] : r.stored) stored[format] = bytes;
  nlohmann::json phases = nlohmann::json::array();
  for (const PhaseMeasure& m : r.phases) {
    nlohmann::json ops = nlohmann::json::array();
    for (const OpTime& t : m.ops) ops.push_back({{"op", t.op}, {"calls", t.calls}, {"ms", t.ms}, {"share", t.share}});
    nlohmann::json phase = {
        {"phase", m.phase},
        {"kind", m.kind == PhaseKind::Decode ? "decode" : "prefill"},
        {"rows", m.rows},
        {"step_ms", stats_json(m.ms)},
        {"tokens_per_s", m.tokens_per_s},
        {"weight_bytes",
         {{"total", m.bytes.total()}, {"dense", m.bytes.dense}, {"embedding_rows", m.bytes.embed},
          {"experts", m.bytes.experts}, {"experts_read", m.bytes.experts_read},
          {"source", "dense weights whole; experts: the router's ids read back in an eager pass"}}},
        {"gb_per_s", m.gb_per_s},
        {"roofline_share", m.roofline_share}};
    if (!m.error.empty()) phase = {{"phase", m.phase}, {"rows", m.rows}, {"error", m.error}};
    if (!m.ops.empty()) {
      phase["per_op"] = ops;
      phase["eager_ms"] = m.eager_ms;
    }
    if (!m.calls.empty()) {
      nlohmann::json calls = nlohmann::json::array();
      for (const CallTime& c : m.calls)
        calls.push_back({{"index", c.index}, {"op", c.op}, {"weight", c.weight}, {"bytes", c.bytes},
                         {"grid", {c.grid[0], c.grid[1], c.grid[2]}}, {"ms", c.ms}});
      phase["per_call"] = {{"calls", calls},
                           {"source", "eager pass, CUDA events around each launch; bytes: the weights the call names "
                                      "as stored, scales included, and a moe_experts call's selected experts"}};
    }
    if (m.exchanges > 0)
      phase["exchanges"] = {{"count", m.exchanges}, {"ms", m.exchange_ms},
                            {"source", "eager pass: each NCCL exchange synchronised before and after, host-timed"}};
    phases.push_back(phase);
  }
  nlohmann::json drafting = nullptr;
  if (r.draft) {
    const DraftRound& d = *r.draft;
    drafting = {{"drafts", d.drafts}, {"draft_phase", d.draft_phase}, {"verify_phase", d.verify_phase},
                {"draft_ms", d.draft_ms}, {"verify_ms", d.verify_ms}, {"round_ms", d.round_ms()},
                {"serial_ms", d.serial_ms}, {"acceptance", d.acceptance},
                {"tokens_per_s", d.tokens_per_s(d.acceptance)}, {"break_even_acceptance", d.break_even},
                {"source", "tokens/s = acceptance / (draft ms + verify ms), the phases' median graph replays"}};
  }
  return {{"device", r.device},
          {"program", r.program},
          {"world", r.world},
          {"rank", r.rank},
          {"alone", r.alone},
          {"with_peers", r.with_peers},
          {"logits_valid", !r.alone},
          {"weights", r.weights},
          {"stored_weight_bytes", stored},
          {"fill", r.fill},
          {"graph_lanes", r.graph_lanes},
          {"programmatic_launch", r.programmatic_launch},
          {"roofline",
           {{"bytes", r.roofline.bytes}, {"blocks", r.roofline.blocks}, {"threads", r.roofline.threads},
            {"launch_ms", stats_json(r.roofline.ms)}, {"gb_per_s", r.roofline.gb_per_s},
            {"best_gb_per_s", r.roofline.best_gb_per_s}}},
          {"phases", phases},
          {"drafting", drafting}};
}

}  // namespace dsv41::gpu
