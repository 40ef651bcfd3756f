// runtime/gpu/device_exchange_group.h — the exchange of ranks that are threads on one GPU: their phases joined into one graph per phase for the world, and the once-a-phase host rendezvous whose last arrival runs it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/gpu/device_exchange.h"
#include "runtime/gpu/phase_graphs_group.h"

namespace dsv41::gpu {

// Shared by every rank of the world (CudaBackend). Each rank's session binds its exchanges as captured
// ones (host_side() false: a rank-major staging buffer of its own) but captures nothing itself: it
// joins the group, and the last rank to join captures every rank's calls together
// (GroupPhaseGraphs). No exchange waits on the host inside a phase; the ranks meet once per phase.
class GroupExchange final : public DeviceExchange {
 public:
  GroupExchange(CudaDriver& driver, int world)
      : driver_(driver), world_(world), streams_(world, nullptr), phases_(world, nullptr) {}
  bool host_side() const override { return false; }
  GroupExchange* as_group() override { return this; }
  std::string describe() const override;
  int world() const { return world_; }

  // At boot, on rank `rank`'s thread (the device's context current): `phases` are its bound phases
  // and `stream` its stream, both kept until the world ends. The last rank to join builds the world's
  // graphs (or, without `graphs`, only pairs the phases for eager runs) and gets a line for its boot
  // report; the others get "".
  Result<std::string> join(int rank, CUstream stream, std::vector<PhaseGraphs>& phases, bool graphs);
  // A step, on the rank's thread, once it has staged its statics on its stream: waits for that
  // stream, meets every other rank at phase `index` (all must run the same phase), and the last to
  // arrive runs it for everyone (GroupPhaseGraphs::run). Every rank returns that run's status.
  Status run(int rank, size_t index);
  // Wakes every rank waiting in run(); they and every later run fail with the first reason.
  void abort(const std::string& reason) override;

 private:
  CudaDriver& driver_;
  const int world_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<CUstream> streams_;                 // each rank's own (its staging)
  std::vector<std::vector<PhaseGraphs>*> phases_;  // each rank's bound phases
  int joined_ = 0;
  std::unique_ptr<GroupPhaseGraphs> graphs_;
  int arrived_ = 0;
  size_t phase_ = 0;
  uint64_t generation_ = 0;  // runs completed
  Status result_;            // the last run's
  std::string aborted_;
};

}  // namespace dsv41::gpu
