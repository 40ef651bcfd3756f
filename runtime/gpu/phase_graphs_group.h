// runtime/gpu/phase_graphs_group.h — every rank of a world on one GPU in one CUDA graph per phase: each rank's calls on its own stream, the exchanges between them as device copies, event edges and the rank-ordered sum.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/nccl_exchange.h"
#include "runtime/gpu/phase_graphs.h"

namespace dsv41::gpu {

// Why one graph for all ranks: capture turns event waits between streams into edges of one graph,
// which the driver orders exactly; graphs replayed separately by each rank's thread would need a
// device-side rendezvous between them (docs/cuda-backend.md weighs the options). The ranks share the
// device's primary context, so one thread captures and launches every rank's kernels, each rank's on
// a stream the group owns (not the rank's own: a rank may stage its next statics on that meanwhile).
//
// An exchange, for every rank r (W ranks, x_r its partial, staging_r its rank-major staging):
//   record ready[r];  wait every ready[s], copy x_s into staging_r's block s;  record copied[r];
//   wait every copied[s] (no x is overwritten while a peer copies it);  sum: the rank-ordered sum
//   kernel writes x_r from staging_r (gather: the call's exchange_gather kernel reads staging_r).
// A rank reads only its own staging and writes only its own x, so exchanges need no double buffer.
class GroupPhaseGraphs {
 public:
  // `ranks[r]` is rank r's phases, bound with captured exchanges (each call's x and the rank's own
  // rank-major staging), one per phase in the program's order; they outlive the group's runs. `sum`
  // launches the rank-ordered sum (NcclExchange::load_sum_kernel's).
  GroupPhaseGraphs(CudaDriver& driver, std::vector<std::vector<PhaseGraphs>*> ranks, NcclExchange::SumKernel sum)
      : driver_(driver), ranks_(std::move(ranks)), sum_(std::move(sum)) {}
  ~GroupPhaseGraphs();
  GroupPhaseGraphs(const GroupPhaseGraphs&) = delete;
  GroupPhaseGraphs& operator=(const GroupPhaseGraphs&) = delete;

  // On a thread whose current context is the ranks' device: checks that the ranks' phases pair up
  // (the same phases, with the same exchanges in the same order and of the same sizes), creates the
  // streams and events and, with `graphs`, captures one graph per phase.
  Status build(bool graphs);
  // Runs phase `index` of every rank and waits for it: the graph launched on rank 0's stream, or
  // (eager) every launch, copy and event of the capture made again from this thread, in its order.
  Status run(size_t index);
  size_t graph_count() const;

 private:
  struct Exchange {
    bool sum = true;
    std::vector<size_t> call;  // per rank: the index of the exchange's call in its phase
  };
  PhaseGraphs& phase(size_t rank, size_t index) const { return (*ranks_[rank])[index]; }
  CUstream stream(size_t rank) const { return streams_[rank]; }
  Result<std::vector<Exchange>> pair_exchanges(size_t index) const;
  // Every rank's calls of phase `index` and its exchanges, forked from and joined into rank 0's stream.
  Status enqueue(size_t index);
  Status exchange(size_t index, const Exchange& e);
  Status record(CUevent event, size_t rank);
  Status wait(size_t rank, CUevent event);

  CudaDriver& driver_;
  std::vector<std::vector<PhaseGraphs>*> ranks_;
  NcclExchange::SumKernel sum_;
  std::vector<CUstream> streams_;  // per rank; a graph is launched on rank 0's
  std::vector<std::vector<Exchange>> exchanges_;  // per phase
  CUevent fork_ = nullptr;
  std::vector<CUevent> ready_, copied_, joined_;  // per rank
  std::vector<CUgraph> graphs_;
  std::vector<CUgraphExec> execs_;  // per phase; empty when eager
};

}  // namespace dsv41::gpu
