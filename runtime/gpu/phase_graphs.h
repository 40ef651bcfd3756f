// runtime/gpu/phase_graphs.h — one phase's calls bound to device addresses, captured as CUDA graphs
// (one per stretch between host-side exchanges) and replayed, or launched call by call (eager).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/kernel_contract.h"
#include "common/status.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device_exchange.h"
#include "runtime/gpu/kernel_launcher.h"
#include "runtime/gpu/phase_lanes.h"

namespace dsv41::gpu {

// A call as the device runs it: its kernel's bindings, and the exchange that runs before the kernel:
// on the host (`host`, between graph segments) when the world's exchange cannot be captured, or
// enqueued on the stream inside the graph (`captured`, NCCL) when it can.
struct BoundCall {
  enum class Host : uint8_t { None, Sum, Gather };
  const Call* call = nullptr;
  LaunchBindings bindings;
  Host host = Host::None;
  Host captured = Host::None;
  bool launches = true;            // false: the host gather wrote `out` itself, no kernel follows
  CUdeviceptr x = 0, out = 0;      // the exchange's buffers
  CUdeviceptr staging = 0;         // captured: the all-gathered partials (the gather kernel's x)
  int64_t width = 0;               // exchange_sum: floats per row; exchange_gather: this rank's width
  std::vector<int64_t> widths;     // exchange_gather: every rank's width
};

// Called around each call an observed run launches, on the host (dsv41-rt bench: CUDA events for its
// per-op table, a read-back of the routing after a router call): `after` false just before the
// launch, true just after it. A failure stops the run.
using CallObserver = std::function<Status(size_t call, bool after)>;

// The graphs of one phase. A segment starts at call 0 and at every call with a host-side exchange,
// so a replay is: [host exchange] graph, [host exchange] graph, ... With no exchange (world 1) or a
// captured one (NCCL: enqueued before its call's kernel, inside the segment) a phase is one graph.
class PhaseGraphs {
 public:
  PhaseGraphs(CudaDriver& driver, KernelLauncher& launcher, const Phase& phase, CallEnv env, int rank)
      : driver_(&driver), launcher_(&launcher), phase_(&phase), env_(std::move(env)), rank_(rank) {}
  ~PhaseGraphs();
  PhaseGraphs(PhaseGraphs&& other) noexcept;
  PhaseGraphs& operator=(PhaseGraphs&&) = delete;
  PhaseGraphs(const PhaseGraphs&) = delete;
  PhaseGraphs& operator=(const PhaseGraphs&) = delete;

  // Calls in phase order, one per phase call.
  void add(BoundCall call) { calls_.push_back(std::move(call)); }
  // Launches no kernel for the calls of `op` (a rank run alone, without its peers, skips exchange_gather,
  // whose kernel would read the other ranks' blocks). Before build.
  void skip_op(const std::string& op);
  // Splits the calls into segments and, with `graphs`, captures each on `stream` (capture does not
  // execute) and instantiates it; captured exchanges are enqueued through `exchange` while capturing.
  Status build(CUstream stream, bool graphs, DeviceExchange& exchange);
  // Runs the phase on `stream`: graph replays, or each call launched when `eager` (the same
  // launches in the same order, so both give the same bits). Host exchanges synchronise `stream`.
  // An `observer` makes the run eager and is called around each launch.
  Status replay(CUstream stream, DeviceExchange& exchange, bool eager, const CallObserver* observer = nullptr);
  size_t graph_count() const;
  size_t segment_count() const { return segments_.size(); }

  // For the graph of every rank on one GPU (phase_graphs_group.h), which makes the exchanges itself:
  // the bound calls, and the kernels of calls [begin, end) launched on `stream` (no exchange enqueued).
  size_t size() const { return calls_.size(); }
  const BoundCall& call(size_t i) const { return calls_[i]; }
  const Phase& phase() const { return *phase_; }
  Status launch_kernels(size_t begin, size_t end, CUstream stream);

 private:
  struct Segment {
    size_t begin = 0, end = 0;  // calls [begin, end)
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
  };
  Status launch_range(const Segment& segment, CUstream stream, DeviceExchange& exchange,
                      const CallObserver* observer = nullptr);
  // What a graph captures of a segment: launch_range's launches, with graph_lanes() on the two lanes of
  // plan_lanes (runtime/gpu/phase_lanes.h): the side stream forks from `stream` and joins it at the end.
  Status capture_range(const Segment& segment, CUstream stream, DeviceExchange& exchange);
  Status enqueue_exchange(size_t i, CUstream stream, DeviceExchange& exchange);
  Status event(size_t i, CUevent& out);
  Status host_exchange(const BoundCall& call, CUstream stream, DeviceExchange& exchange);
  std::string where(size_t i) const;

  CudaDriver* driver_;
  KernelLauncher* launcher_;
  const Phase* phase_;
  CallEnv env_;
  int rank_;
  std::vector<BoundCall> calls_;
  std::vector<Segment> segments_;
  CUstream side_ = nullptr;      // the side lane's stream (capture only)
  std::vector<CUevent> events_;  // after call k of the segment being captured; at n and n + 1 its fork and join
};

}  // namespace dsv41::gpu
