// runtime/gpu/device_exchange_group.cpp — joining the ranks' phases into the world's graphs, and the per-phase rendezvous whose last arrival launches them.
#include "runtime/gpu/device_exchange_group.h"

#include <chrono>

namespace dsv41::gpu {

std::string GroupExchange::describe() const {
  return fmt::format("on the device, inside the graphs: one graph per phase holds all {} ranks on this GPU, "
                     "each exchange device copies and a rank-ordered sum", world_);
}

Result<std::string> GroupExchange::join(int rank, CUstream stream, std::vector<PhaseGraphs>& phases, bool graphs) {
  std::lock_guard lock(mutex_);
  if (rank < 0 || rank >= world_) return Status::errorf("exchange group: rank {} outside a world of {}", rank, world_);
  if (phases_[rank]) return Status::errorf("exchange group: rank {} joined twice", rank);
  streams_[rank] = stream;
  phases_[rank] = &phases;
  if (++joined_ < world_) return std::string();
  // The last rank: every peer's phases are bound, so the world's graphs can be captured now. The sum
  // kernel's module is loaded into this thread's context, which every rank on this GPU shares.
  const auto start = std::chrono::steady_clock::now();
  DSV41_ASSIGN_OR_RETURN(NcclExchange::SumKernel sum, NcclExchange::load_sum_kernel(driver_));
  auto built = std::make_unique<GroupPhaseGraphs>(driver_, phases_, std::move(sum));
  DSV41_TRY(built->build(graphs));
  graphs_ = std::move(built);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const size_t phases_count = phases.size();
  if (!graphs)
    return fmt::format("world of {} ranks on one GPU: --eager, {} phases paired, no graph captured", world_, phases_count);
  return fmt::format("world of {} ranks on one GPU: {} graphs for {} phases (one per phase, every rank's calls and "
                     "exchanges inside) built in {:.3f} s",
                     world_, graphs_->graph_count(), phases_count, seconds);
}

Status GroupExchange::run(int rank, size_t index) {
  if (rank < 0 || rank >= world_ || !phases_[rank])
    return Status::errorf("exchange group: rank {} has not joined (world {})", rank, world_);
  // The statics and zeroed error words this rank staged must land before any rank launches the phase.
  DSV41_TRY(driver_.check(driver_.cuStreamSynchronize(streams_[rank]), "cuStreamSynchronize (staged statics)"));
  std::unique_lock lock(mutex_);
  if (!aborted_.empty()) return Status::errorf("exchange aborted: {}", aborted_);
  if (arrived_ == 0) {
    phase_ = index;
  } else if (index != phase_) {
    return Status::errorf("exchange group: rank {} runs phase #{} while the ranks before it run phase #{}", rank, index,
                          phase_);
  }
  const uint64_t generation = generation_;
  if (++arrived_ < world_) {
    wake_.wait(lock, [&] { return generation_ != generation || !aborted_.empty(); });
    if (generation_ == generation) return Status::errorf("exchange aborted: {}", aborted_);
    return result_;
  }
  // The last to arrive: every other rank waits here until the run is over.
  arrived_ = 0;
  if (!graphs_) return Status::error("exchange group: the ranks' graphs were not built (a rank failed to boot)");
  lock.unlock();
  const Status status = graphs_->run(index);
  lock.lock();
  result_ = status;
  ++generation_;
  lock.unlock();
  wake_.notify_all();
  return status;
}

void GroupExchange::abort(const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (aborted_.empty()) aborted_ = reason.empty() ? std::string("aborted") : reason;
  }
  wake_.notify_all();
}

}  // namespace dsv41::gpu
