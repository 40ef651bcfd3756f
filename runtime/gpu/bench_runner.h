// runtime/gpu/bench_runner.h — `dsv41-rt bench` as a library: boots one rank on the GPU, measures the
// read roofline, then per phase the graph-replay step time, the weight bytes the step reads (the
// router's choices read back in an eager pass), GB/s against the roofline, and optionally per-call times.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/status.h"
#include <optional>

#include "runtime/gpu/bench_bytes.h"
#include "runtime/gpu/bench_calls.h"
#include "runtime/gpu/bench_draft.h"
#include "runtime/gpu/bench_plan.h"
#include "runtime/gpu/bench_stats.h"
#include "runtime/gpu/cuda_backend.h"
#include "runtime/gpu/stream_read.h"

namespace dsv41::gpu {

// The calls of one op in the eager pass: CUDA events just before and after each launch.
struct OpTime {
  std::string op;
  int64_t calls = 0;
  double ms = 0;     // Σ of its calls' times
  double share = 0;  // of Σ over every call
};

struct PhaseMeasure {
  std::string phase;
  PhaseKind kind = PhaseKind::Decode;
  int64_t rows = 0;
  TimeStats ms;             // one step: a graph replay, between CUDA events around back-to-back replays
  double tokens_per_s = 0;  // rows / median step
  StepBytes bytes;          // weights read by one step
  double gb_per_s = 0;      // bytes.total() / median step
  double roofline_share = 0;
  double eager_ms = 0;      // Σ of the per-call times (--per-op; 0 without)
  // Ranks as processes over NCCL: the exchanges of one step (the eager pass), each synchronised
  // before and after and host-timed, so waiting for the peer counts; 0 exchanges: not measured.
  int64_t exchanges = 0;
  double exchange_ms = 0;
  std::vector<OpTime> ops;  // --per-op: slowest first
  std::vector<CallTime> calls;  // --per-op: every launched call naming a weight, in call order
  std::string error;        // the phase failed (the others are still measured); empty: measured
};

struct BenchReport {
  std::string device, program, weights;  // weights: "synthetic, seed N" or "read from DIR"
  int world = 1, rank = 0;
  bool alone = false;
  bool with_peers = false;  // every rank of the world ran the bench as its own process (NCCL)
  int64_t fill = 0;
  bool programmatic_launch = true, graph_lanes = true;  // how the graphs were launched (--no-pdl, --one-lane)
  std::vector<std::pair<std::string, uint64_t>> stored;  // bytes on the device per weight format
  ReadBandwidth roofline;
  std::vector<PhaseMeasure> phases;
  std::optional<DraftRound> draft;  // --draft K: the round from the measured phases
};

// Checks the options and the program before any device work; fails naming what stopped it (no driver:
// libcuda's message). A phase that fails is reported in its PhaseMeasure::error and the next is
// measured. `on_report` receives the report as soon as the last phase is measured, before the
// session and its device memory are released; its failure is returned.
using BenchReportSink = std::function<Status(const BenchReport&)>;
Status run_bench(const BenchOptions& options, const BenchReportSink& on_report);

// The CUDA backend's options a bench boots its rank with: its device, weights and progress.
CudaBackendOptions bench_cuda_options(const BenchOptions& options);

// Per-op rows from per-call times (ops[i] is call i's op; a negative time: the call did not launch),
// grouped by op, slowest first, shares of the total.
std::vector<OpTime> group_op_times(const std::vector<std::string>& ops, const std::vector<double>& call_ms);

}  // namespace dsv41::gpu
