// runtime/gpu/bench_runner.cpp — one rank booted, the roofline, and each phase timed, weighed and (optionally) split per call.
#include "runtime/gpu/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "common/model_config.h"
#include "common/program_calls.h"
#include "runtime/gpu/programmatic_launch.h"
#include "common/program_file.h"
#include "runtime/gpu/bench_events.h"
#include "runtime/gpu/device_exchange.h"
#include "runtime/gpu/gpu_session.h"
#include "runtime/gpu/nccl_exchange.h"
#include "runtime/gpu/session_boot.h"

namespace dsv41::gpu {
namespace {

template <class... Args>
void say(const BenchOptions& o, fmt::format_string<Args...> format, Args&&... args) {
  if (!o.progress) return;
  std::fprintf(o.progress, "bench: %s\n", fmt::format(format, std::forward<Args>(args)...).c_str());
  std::fflush(o.progress);
}

// The eager pass: the routing of every moe_experts call read back just before it launches (the
// router's ids buffer is reused by every layer), and with `per_op` events around every launch.
struct EagerPass {
  std::vector<std::vector<int32_t>> ids;
  std::vector<double> call_ms;  // -1: not launched
};

Result<EagerPass> eager_pass(GpuSession& session, const Phase& phase, const PhaseWeightBytes& weights, bool per_op) {
  CudaDriver& d = session.driver();
  EagerPass pass;
  pass.ids.resize(weights.experts.size());
  std::map<size_t, size_t> expert_call;  // call index -> index in weights.experts
  for (size_t k = 0; k < weights.experts.size(); ++k) expert_call[weights.experts[k].call] = k;
  const size_t n = phase.calls.size();
  DSV41_ASSIGN_OR_RETURN(EventRow events, EventRow::create(d, per_op ? 2 * n : 0));
  std::vector<bool> launched(n, false);
  const CallObserver observer = [&](size_t call, bool after) -> Status {
    if (!after) {
      if (auto it = expert_call.find(call); it != expert_call.end()) {
        const ExpertCall& e = weights.experts[it->second];
        DSV41_TRY(d.check(d.cuStreamSynchronize(session.stream()), "cuStreamSynchronize(before reading the routing)"));
        DSV41_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, session.read_buffer(phase, e.ids_buffer));
        std::vector<int32_t>& ids = pass.ids[it->second];
        ids.resize(static_cast<size_t>(phase.rows * e.topk));  // every bench row is active
        std::memcpy(ids.data(), bytes.data(), ids.size() * sizeof(int32_t));
      }
    }
    if (!per_op) return Status::ok();
    launched[call] = true;
    return events.record(2 * call + (after ? 1 : 0), session.stream());
  };
  DSV41_TRY(session.enqueue(phase, &observer));
  DSV41_TRY(session.finish(phase));
  if (per_op) {
    pass.call_ms.assign(n, -1.0);
    for (size_t i = 0; i < n; ++i) {
      if (!launched[i]) continue;
      DSV41_ASSIGN_OR_RETURN(pass.call_ms[i], events.between_ms(2 * i, 2 * i + 1));
    }
  }
  return pass;
}

Result<PhaseMeasure> measure_phase(GpuSession& session, const fb::Program& program, const Phase& phase, int64_t vocab,
                                   int64_t sequence_rows, const BenchOptions& o, double roofline_gb_per_s) {
  PhaseMeasure m;
  m.phase = phase.name;
  m.kind = phase.kind;
  m.rows = phase.rows;
  DSV41_ASSIGN_OR_RETURN(const std::vector<int32_t> statics,
                         bench_statics(phase, o.fill, session.slots(), session.context(), vocab, sequence_rows));
  DSV41_TRY(session.stage(phase, statics));
  // Warm-up replays, host-timed, size the timed run to the phase budget.
  const int sizing = std::max(o.warmup, 1);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < sizing; ++i) DSV41_TRY(session.enqueue(phase));
  DSV41_TRY(session.finish(phase));
  const double per = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / sizing;
  const int fit = per > 0 ? static_cast<int>(std::floor(o.phase_seconds / per)) : o.replays;
  // With peers every rank must replay (and so exchange) as often as the others: no sizing by time.
  const int replays = o.exchange ? o.replays : std::min(o.replays, std::max(fit, std::min(o.replays, 3)));
  say(o, "{}: warm-up {} replay{} ({:.3f} ms each, host-timed); timing {} replay{}", phase.name, sizing,
      sizing == 1 ? "" : "s", per * 1e3, replays, replays == 1 ? "" : "s");

  DSV41_ASSIGN_OR_RETURN(EventRow events, EventRow::create(session.driver(), static_cast<size_t>(replays) + 1));
  DSV41_TRY(events.record(0, session.stream()));
  for (int i = 0; i < replays; ++i) {
    DSV41_TRY(session.enqueue(phase));
    DSV41_TRY(events.record(static_cast<size_t>(i) + 1, session.stream()));
  }
  DSV41_ASSIGN_OR_RETURN(const std::vector<double> ms, events.gaps_ms(0, static_cast<size_t>(replays)));
  DSV41_TRY(session.finish(phase));
  DSV41_ASSIGN_OR_RETURN(m.ms, time_stats(ms));
  m.tokens_per_s = static_cast<double>(phase.rows) / (m.ms.median * 1e-3);

  DSV41_ASSIGN_OR_RETURN(const PhaseWeightBytes weights, phase_weight_bytes(program, phase, session.layout()));
  const NcclExchange::Timing before = o.nccl ? o.nccl->timing() : NcclExchange::Timing{};
  DSV41_ASSIGN_OR_RETURN(const EagerPass pass, eager_pass(session, phase, weights, o.per_op));
  if (o.nccl) {
    m.exchanges = o.nccl->timing().exchanges - before.exchanges;
    m.exchange_ms = (o.nccl->timing().seconds - before.seconds) * 1e3;
  }
  std::set<int32_t> tokens;
  for (int64_t r = 0; r < phase.rows; ++r) tokens.insert(statics[static_cast<size_t>(r * kStaticsFields + kStaticToken)]);
  DSV41_ASSIGN_OR_RETURN(m.bytes, step_bytes(weights, static_cast<int64_t>(tokens.size()), pass.ids));
  m.gb_per_s = static_cast<double>(m.bytes.total()) / (m.ms.median * 1e-3) / 1e9;
  m.roofline_share = roofline_gb_per_s > 0 ? m.gb_per_s / roofline_gb_per_s : 0;
  if (o.per_op) {
    std::vector<std::string> ops;
    for (const Call& c : phase.calls) ops.push_back(c.op);
    m.ops = group_op_times(ops, pass.call_ms);
    DSV41_ASSIGN_OR_RETURN(m.calls, call_times(program, phase, session.layout(), pass.call_ms));
    add_routed_bytes(m.calls, weights.experts, m.bytes.routed);
    for (double t : pass.call_ms) m.eager_ms += std::max(t, 0.0);
  }
  say(o, "{}: median {:.3f} ms (p10 {:.3f}, p90 {:.3f}), {:.1f} tokens/s, {:.1f} MB of weights, {:.0f} GB/s ({:.1f}% of "
      "the roofline)", phase.name, m.ms.median, m.ms.p10, m.ms.p90, m.tokens_per_s, m.bytes.total() / 1e6, m.gb_per_s,
      100 * m.roofline_share);
  if (m.exchanges > 0)
    say(o, "{}: {} NCCL exchanges a step took {:.3f} ms (eager pass, each synchronised and host-timed)", phase.name,
        m.exchanges, m.exchange_ms);
  return m;
}

}  // namespace

std::vector<OpTime> group_op_times(const std::vector<std::string>& ops, const std::vector<double>& call_ms) {
  DSV41_CHECK(ops.size() == call_ms.size());
  std::map<std::string, OpTime> by_op;
  double total = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (call_ms[i] < 0) continue;
    OpTime& t = by_op[ops[i]];
    t.op = ops[i];
    t.calls += 1;
    t.ms += call_ms[i];
    total += call_ms[i];
  }
  std::vector<OpTime> out;
  for (auto& [op, t] : by_op) {
    t.share = total > 0 ? t.ms / total : 0;
    out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(), [](const OpTime& a, const OpTime& b) { return a.ms > b.ms; });
  return out;
}

CudaBackendOptions bench_cuda_options(const BenchOptions& o) {
  CudaBackendOptions cuda;
  cuda.device = o.device;
  cuda.model_dir = o.model_dir;
  cuda.synthetic_seed = o.synthetic_seed;
  cuda.log = o.progress;
  return cuda;
}

Status run_bench(const BenchOptions& o, const BenchReportSink& on_report) {
  DSV41_TRY(check_bench_options(o));
  DSV41_ASSIGN_OR_RETURN(const ProgramFile file, ProgramFile::load(o.program));
  const fb::Program& p = file.program();
  DSV41_TRY(check_bench_world(o.program, p.world(), p.rank(), o.alone, o.exchange != nullptr));
  DSV41_ASSIGN_OR_RETURN(const CallLists calls, read_call_lists(p));
  DSV41_TRY(pick_bench_phases(calls.phases, o).status());  // a missing phase fails before the boot
  DSV41_ASSIGN_OR_RETURN(const ModelConfig config, parse_model_config(p.config_json()->str(), o.program + ": config"));

  DSV41_ASSIGN_OR_RETURN(CudaDriver * driver, CudaDriver::open());
  DSV41_ASSIGN_OR_RETURN(const int count, driver->device_count());
  DSV41_TRY(check_device_ordinal(fmt::format("--device {}", o.device), o.device, count));
  DSV41_TRY(driver->use_device(o.device));

  BenchReport report;
  report.device = driver->describe_device();
  report.program = o.program;
  report.world = p.world();
  report.rank = p.rank();
  report.alone = o.alone;
  report.with_peers = o.exchange != nullptr && p.world() > 1;
  report.fill = o.fill;
  report.programmatic_launch = o.programmatic_launch;
  report.graph_lanes = o.graph_lanes;
  report.weights = o.synthetic_seed ? fmt::format("synthetic, seed {}", *o.synthetic_seed) : "read from " + o.model_dir;
  // Before the boot, so the buffer and the model never compete for memory.
  say(o, "roofline: streaming read of {} MiB on {}", o.roofline_mib, report.device);
  DSV41_ASSIGN_OR_RETURN(report.roofline,
                         measure_read_bandwidth(*driver, static_cast<uint64_t>(o.roofline_mib) << 20, 3, 20));
  say(o, "roofline: {:.0f} GB/s (median of {}; best {:.0f} GB/s)", report.roofline.gb_per_s, report.roofline.ms.count,
      report.roofline.best_gb_per_s);

  HostStagedExchange own_exchange(*driver, 1);  // world 1 never calls it; --alone binds no host exchange
  DeviceExchange& exchange = o.exchange ? *o.exchange : own_exchange;
  set_programmatic_launch(o.programmatic_launch);  // process-wide (runtime/gpu/programmatic_launch.h)
  set_graph_lanes(o.graph_lanes);                  // process-wide (runtime/gpu/programmatic_launch.h)
  say(o, "booting rank {} of world {}{} ({})", p.rank(), p.world(), o.alone ? ", alone" : "", report.weights);
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<GpuSession> session,
                         boot_session(file, bench_cuda_options(o), *driver, exchange, o.alone));
  // After the boot: the graphs are captured, so only the eager passes call the exchange (and are timed).
  if (o.nccl) o.nccl->time_exchanges(*driver);

  std::map<std::string, uint64_t> stored;
  const DeviceLayout& layout = session->layout();
  for (size_t i = 0; i < layout.format.size(); ++i)
    if (layout.stored.offset[i] >= 0) {
      const int64_t scale = layout.scale_of[i];
      const uint64_t with_scale = layout.stored.bytes[i] + (scale >= 0 && layout.stored.offset[scale] >= 0 ? layout.stored.bytes[scale] : 0);
      if (layout.format[i]) stored[std::string(weight_format_name(*layout.format[i]))] += with_scale;
    }
  report.stored.assign(stored.begin(), stored.end());

  DSV41_ASSIGN_OR_RETURN(const std::vector<const Phase*> phases, pick_bench_phases(session->phases(), o));
  for (const Phase* phase : phases) {
    auto measured = measure_phase(*session, p, *phase, config.vocab_size, draft_sequence_rows(*phase, session->phases(), o),
                                  o, report.roofline.gb_per_s);
    if (measured.is_ok()) {
      report.phases.push_back(std::move(measured).value());
      continue;
    }
    // With peers a phase this rank gave up on would leave theirs waiting in a collective: fail the world.
    if (o.exchange) return measured.status().with_context(phase->name);
    PhaseMeasure failed;
    failed.phase = phase->name;
    failed.kind = phase->kind;
    failed.rows = phase->rows;
    failed.error = measured.status().message();
    say(o, "{}: failed: {}", phase->name, failed.error);
    report.phases.push_back(std::move(failed));
  }
  if (o.draft > 0) {
    DSV41_ASSIGN_OR_RETURN(const Phase* draft, draft_phase_of(session->phases(), o.draft));
    DSV41_ASSIGN_OR_RETURN(const Phase* verify, verify_phase_of(session->phases(), o.draft));
    auto round = draft_round(report.phases, o, draft->name, verify->name);
    if (round.is_ok()) report.draft = *round;
    else say(o, "drafting: {}", round.status().message());
  }
  return on_report(report);
}

}  // namespace dsv41::gpu
