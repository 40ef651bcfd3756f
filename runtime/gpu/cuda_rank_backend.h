// runtime/gpu/cuda_rank_backend.h — the CUDA backend as one rank process: this process's GPU, the NCCL communicator made from rank 0's id, and a GpuSession exchanging through NCCL inside its graphs.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "runtime/dist/rank_backend.h"
#include "runtime/gpu/cuda_backend.h"
#include "runtime/gpu/nccl_comm.h"
#include "runtime/gpu/nccl_exchange.h"

namespace dsv41::gpu {

struct CudaRankOptions {
  CudaBackendOptions cuda;  // device: this process's GPU (`launch --gpus` shows each rank only its own, as 0)
  int nccl_poll_ms = 50;    // how often ncclCommGetAsyncError is asked
  // An NCCL error that the control connection did not explain first waits this long before it is
  // taken for this rank's own failure: a peer that died is reported as such (exit 3) by the control
  // connection, which usually sees the closed socket at once.
  int nccl_error_grace_ms = 300;
  bool time_exchanges = false;  // --eager only: wall time of every exchange, reported when the rank ends
};

class CudaRankBackend final : public dist::RankBackend {
 public:
  // Opens the driver and makes `options.cuda.device` current on the calling thread (the rank's main
  // thread), before the agreement, which compares every rank's device arch.
  static Result<std::unique_ptr<CudaRankBackend>> open(const CudaRankOptions& options);
  ~CudaRankBackend() override;

  std::string arch() const override { return arch_; }
  // World 1: no communicator. Otherwise rank 0 makes the NCCL unique id and sends it over `control`,
  // every rank joins the communicator (ncclCommInitRank) and watches it for asynchronous errors, then
  // boots its GpuSession with the NCCL exchange (one graph per phase, exchanges inside).
  Result<std::unique_ptr<RankSession>> create(const ProgramFile& program, dist::Control& control) override;
  // What create() does before the boot: the communicator and the exchange a session of `program` uses
  // (`dsv41-rt bench` as a rank boots its own GpuSession with it). Owned by this backend.
  Result<DeviceExchange*> join(const ProgramFile& program, dist::Control& control);
  // The NCCL exchange after join() at world > 1 (its timing), or null.
  NcclExchange* nccl_exchange() const { return nccl_exchange_; }
  // Another rank failed: ncclCommAbort, so nothing of this rank waits on the dead peer.
  void abort(const std::string& reason) override;
  // Reports the exchange timing (--time-exchanges), then ends the watch and aborts the communicator.
  void close() override;

 private:
  CudaRankBackend(CudaDriver& driver, CudaRankOptions options, std::string arch)
      : driver_(driver), options_(std::move(options)), arch_(std::move(arch)) {}
  Status join_communicator(int rank, int world, dist::Control& control);

  CudaDriver& driver_;
  CudaRankOptions options_;
  std::string arch_;
  std::unique_ptr<NcclComm> comm_;
  std::atomic<NcclComm*> live_comm_{nullptr};  // comm_ for abort(), which a control reader thread calls
  std::unique_ptr<DeviceExchange> exchange_;
  NcclExchange* nccl_exchange_ = nullptr;  // exchange_ at world > 1
  int rank_ = 0;
};

}  // namespace dsv41::gpu
