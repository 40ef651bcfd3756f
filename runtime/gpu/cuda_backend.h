// runtime/gpu/cuda_backend.h — the CUDA Backend: a world whose ranks are threads of this process, all on
// one GPU (device N) or one GPU each (devices), each rank a GpuSession. On one GPU the ranks exchange
// inside one graph per phase for the world (GroupExchange); on several, over NCCL inside each rank's
// graphs; with --exchange host, or where NCCL is missing, through the host-staged exchange.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/gpu/device_exchange.h"
#include "runtime/gpu/gpu_session.h"
#include "runtime/gpu/nccl_comm.h"
#include "runtime/gpu/nccl_exchange.h"
#include "runtime/rank_session.h"

namespace dsv41::gpu {

struct CudaBackendOptions {
  std::string model_dir;
  int device = 0;          // the CUDA ordinal every rank uses, unless `devices` is given
  std::vector<int> devices;  // rank r on devices[r] (exactly one per rank, no ordinal twice)
  bool eager = false;      // no graphs: launch every call on each run
  std::FILE* log = stderr; // each rank's boot report and weight-load progress; nullptr: silent
  std::optional<uint64_t> synthetic_seed;  // --synthetic-weights SEED: no weight file is read
  // --exchange: Device (inside the graphs: device copies on one GPU, NCCL on several; the host-staged
  // exchange where NCCL cannot be opened, and the boot report says so) or Host (host-staged everywhere).
  enum class Exchange { Device, Host };
  Exchange exchange = Exchange::Device;
};

class CudaBackend final : public Backend {
 public:
  // Opens the driver and checks the device exists; a machine without one fails here, naming why.
  static Result<std::unique_ptr<CudaBackend>> open(int world, const CudaBackendOptions& options);

  // On the rank's own thread: makes the device's context current there, then boots the rank.
  Result<std::unique_ptr<RankSession>> create(const ProgramFile& program) override;
  void abort(const std::string& reason) override;

 private:
  // The ordinal rank `rank` runs on.
  int device_of(int rank) const { return options_.devices.empty() ? options_.device : options_.devices[rank]; }
  CudaBackend(CudaDriver& driver, int world, CudaBackendOptions options)
      : driver_(driver), world_(world), options_(std::move(options)) {}
  // Chooses the world's exchange (above); `note_` says why where the device one could not be had.
  void choose_exchange();
  // The rank's exchange: the shared one, or (NCCL) its own, made on its thread (the sum kernel loads
  // into the rank's device).
  Result<DeviceExchange*> exchange_for(int rank);
  CudaDriver& driver_;
  int world_;
  CudaBackendOptions options_;
  std::unique_ptr<DeviceExchange> exchange_;       // shared by every rank; null with NCCL
  std::vector<std::unique_ptr<NcclComm>> comms_;   // --devices: a communicator per rank (before its exchange)
  std::vector<std::unique_ptr<NcclExchange>> nccl_exchanges_;  // per rank
  std::string note_;
  std::mutex mutex_;       // nccl_exchanges_, which each rank's thread fills
  std::mutex boot_mutex_;  // one rank's boot (and its log lines) at a time
};

}  // namespace dsv41::gpu
