// runtime/gpu/phase_graphs.cpp — segments split at host-side exchanges (captured ones stay inside), stream capture, replay and eager launches.
#include "runtime/gpu/phase_graphs.h"

#include <utility>

#include "runtime/gpu/programmatic_launch.h"

namespace dsv41::gpu {

PhaseGraphs::~PhaseGraphs() {
  for (Segment& s : segments_) {
    if (s.exec) (void)driver_->cuGraphExecDestroy(s.exec);
    if (s.graph) (void)driver_->cuGraphDestroy(s.graph);
  }
  for (CUevent e : events_)
    if (e) (void)driver_->cuEventDestroy(e);
  if (side_) (void)driver_->cuStreamDestroy(side_);
}

PhaseGraphs::PhaseGraphs(PhaseGraphs&& other) noexcept
    : driver_(other.driver_), launcher_(other.launcher_), phase_(other.phase_), env_(std::move(other.env_)),
      rank_(other.rank_), calls_(std::move(other.calls_)), segments_(std::exchange(other.segments_, {})),
      side_(std::exchange(other.side_, nullptr)), events_(std::exchange(other.events_, {})) {}

std::string PhaseGraphs::where(size_t i) const {
  return fmt::format("phase {} call #{} ({})", phase_->name, i, calls_[i].call->op);
}

size_t PhaseGraphs::graph_count() const {
  size_t n = 0;
  for (const Segment& s : segments_) n += s.exec != nullptr;
  return n;
}

void PhaseGraphs::skip_op(const std::string& op) {
  for (BoundCall& c : calls_)
    if (c.call->op == op) c.launches = false;
}

Status PhaseGraphs::launch_range(const Segment& segment, CUstream stream, DeviceExchange& exchange,
                                 const CallObserver* observer) {
  for (size_t i = segment.begin; i < segment.end; ++i) {
    const BoundCall& c = calls_[i];
    DSV41_TRY(enqueue_exchange(i, stream, exchange));
    if (!c.launches) continue;
    if (observer) DSV41_TRY((*observer)(i, false));
    const Status launched = launcher_->launch(*c.call, env_, c.bindings, stream);
    if (!launched.is_ok()) return launched.with_context(where(i));
    if (observer) DSV41_TRY((*observer)(i, true));
  }
  return Status::ok();
}

Status PhaseGraphs::enqueue_exchange(size_t i, CUstream stream, DeviceExchange& exchange) {
  const BoundCall& c = calls_[i];
  if (c.captured == BoundCall::Host::None) return Status::ok();
  const Status enqueued = c.captured == BoundCall::Host::Sum
                              ? exchange.enqueue_sum(rank_, c.x, phase_->rows * c.width, c.staging, stream)
                              : exchange.enqueue_gather(rank_, c.x, phase_->rows, c.widths, c.staging, stream);
  return enqueued.is_ok() ? enqueued : enqueued.with_context(where(i));
}

Status PhaseGraphs::event(size_t i, CUevent& out) {
  if (events_.size() <= i) events_.resize(i + 1, nullptr);
  if (!events_[i])
    DSV41_TRY(driver_->check(driver_->cuEventCreate(&events_[i], CU_EVENT_DISABLE_TIMING), "cuEventCreate(graph lane)"));
  out = events_[i];
  return Status::ok();
}

Status PhaseGraphs::capture_range(const Segment& segment, CUstream stream, DeviceExchange& exchange) {
  if (!graph_lanes()) return launch_range(segment, stream, exchange);
  const size_t n = segment.end - segment.begin;
  std::vector<LaneCall> lane_calls(n);
  for (size_t k = 0; k < n; ++k) {
    const BoundCall& c = calls_[segment.begin + k];
    lane_calls[k] = {c.call, c.launches, c.captured != BoundCall::Host::None};
  }
  const LanePlan plan = plan_lanes(*phase_, lane_calls);
  std::vector<bool> recorded(n, false);  // whose completion a call of the other lane waits for
  for (long w : plan.wait_for)
    if (w >= 0) recorded[static_cast<size_t>(w)] = true;
  if (!side_)
    DSV41_TRY(driver_->check(driver_->cuStreamCreate(&side_, CU_STREAM_NON_BLOCKING), "cuStreamCreate(graph lane)"));
  const CUstream lanes[2] = {stream, side_};
  // Events n and n + 1 (past the calls'): the fork into the side lane and its join at the end.
  CUevent fork = nullptr, join = nullptr;
  DSV41_TRY(event(n, fork));
  DSV41_TRY(event(n + 1, join));
  DSV41_TRY(driver_->check(driver_->cuEventRecord(fork, stream), "cuEventRecord(graph lane fork)"));
  DSV41_TRY(driver_->check(driver_->cuStreamWaitEvent(side_, fork, 0), "cuStreamWaitEvent(graph lane fork)"));
  for (size_t k = 0; k < n; ++k) {
    const size_t i = segment.begin + k;
    if (plan.lane[k] < 0) continue;
    const CUstream s = lanes[plan.lane[k]];
    if (plan.wait_for[k] >= 0)
      DSV41_TRY(driver_->check(driver_->cuStreamWaitEvent(s, events_[static_cast<size_t>(plan.wait_for[k])], 0),
                               fmt::format("cuStreamWaitEvent({})", where(i))));
    DSV41_TRY(enqueue_exchange(i, s, exchange));
    if (calls_[i].launches) {
      const Status launched = launcher_->launch(*calls_[i].call, env_, calls_[i].bindings, s);
      if (!launched.is_ok()) return launched.with_context(where(i));
    }
    if (recorded[k]) {
      CUevent e = nullptr;
      DSV41_TRY(event(k, e));
      DSV41_TRY(driver_->check(driver_->cuEventRecord(e, s), fmt::format("cuEventRecord({})", where(i))));
    }
  }
  // The side lane always joins: capture refuses a stream that forked and never came back.
  DSV41_TRY(driver_->check(driver_->cuEventRecord(join, side_), "cuEventRecord(graph lane join)"));
  return driver_->check(driver_->cuStreamWaitEvent(stream, join, 0), "cuStreamWaitEvent(graph lane join)");
}

Status PhaseGraphs::launch_kernels(size_t begin, size_t end, CUstream stream) {
  for (size_t i = begin; i < end && i < calls_.size(); ++i) {
    if (!calls_[i].launches) continue;
    const Status launched = launcher_->launch(*calls_[i].call, env_, calls_[i].bindings, stream);
    if (!launched.is_ok()) return launched.with_context(where(i));
  }
  return Status::ok();
}

Status PhaseGraphs::build(CUstream stream, bool graphs, DeviceExchange& exchange) {
  segments_.clear();
  for (size_t i = 0; i < calls_.size(); ++i)
    if (i == 0 || calls_[i].host != BoundCall::Host::None) segments_.push_back({i, i});
  for (size_t s = 0; s < segments_.size(); ++s)
    segments_[s].end = s + 1 < segments_.size() ? segments_[s + 1].begin : calls_.size();
  if (!graphs) return Status::ok();
  for (Segment& s : segments_) {
    bool any = false;
    for (size_t i = s.begin; i < s.end; ++i) any |= calls_[i].launches;
    if (!any) continue;  // a host gather with nothing after it: no graph
    // Thread-local capture: the other ranks' threads keep making their own (uncaptured) calls meanwhile.
    DSV41_TRY(driver_->check(driver_->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                             fmt::format("cuStreamBeginCapture_v2(phase {})", phase_->name)));
    const Status launched = capture_range(s, stream, exchange);
    CUgraph graph = nullptr;
    const Status ended = driver_->check(driver_->cuStreamEndCapture(stream, &graph),
                                        fmt::format("cuStreamEndCapture(phase {})", phase_->name));
    if (!launched.is_ok()) {
      if (graph) (void)driver_->cuGraphDestroy(graph);
      return launched;
    }
    DSV41_TRY(ended);
    s.graph = graph;
    DSV41_TRY(driver_->check(driver_->cuGraphInstantiate(&s.exec, graph, 0),
                             fmt::format("cuGraphInstantiateWithFlags(phase {}, calls {}..{})", phase_->name, s.begin,
                                         s.end - 1)));
  }
  return Status::ok();
}

Status PhaseGraphs::host_exchange(const BoundCall& c, CUstream stream, DeviceExchange& exchange) {
  if (c.host == BoundCall::Host::Sum) return exchange.sum(rank_, c.x, phase_->rows * c.width, stream);
  return exchange.gather(rank_, c.x, phase_->rows, c.widths, c.out, stream);
}

Status PhaseGraphs::replay(CUstream stream, DeviceExchange& exchange, bool eager, const CallObserver* observer) {
  for (const Segment& s : segments_) {
    if (calls_[s.begin].host != BoundCall::Host::None) {
      const Status exchanged = host_exchange(calls_[s.begin], stream, exchange);
      if (!exchanged.is_ok()) return exchanged.with_context(where(s.begin));
    }
    if (eager || observer) {
      DSV41_TRY(launch_range(s, stream, exchange, observer));
    } else if (s.exec) {
      DSV41_TRY(driver_->check(driver_->cuGraphLaunch(s.exec, stream),
                               fmt::format("cuGraphLaunch(phase {}, calls {}..{})", phase_->name, s.begin, s.end - 1)));
    }
  }
  return Status::ok();
}

}  // namespace dsv41::gpu
