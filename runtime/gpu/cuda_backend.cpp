// runtime/gpu/cuda_backend.cpp — driver and device checks, and each rank's boot on its own thread.
#include "runtime/gpu/cuda_backend.h"

#include <fmt/ranges.h>

#include "runtime/gpu/device_exchange_group.h"
#include "runtime/gpu/session_boot.h"

namespace dsv41::gpu {

Result<std::unique_ptr<CudaBackend>> CudaBackend::open(int world, const CudaBackendOptions& options) {
  DSV41_ASSIGN_OR_RETURN(CudaDriver * driver, CudaDriver::open());
  DSV41_ASSIGN_OR_RETURN(const int count, driver->device_count());
  DSV41_TRY(check_device_ordinal(fmt::format("--device {}", options.device), options.device, count));
  if (world < 1) return Status::errorf("world {}: must be at least 1", world);
  if (!options.devices.empty()) {
    if (static_cast<int>(options.devices.size()) != world)
      return Status::errorf("--devices {}: {} ordinal{} for world {} (one per rank)", fmt::join(options.devices, ","),
                            options.devices.size(), options.devices.size() == 1 ? "" : "s", world);
    for (size_t i = 0; i < options.devices.size(); ++i) {
      const int d = options.devices[i];
      DSV41_TRY(check_device_ordinal(fmt::format("--devices: ordinal {} (rank {})", d, i), d, count));
      for (size_t j = 0; j < i; ++j)
        if (options.devices[j] == d)
          return Status::errorf("--devices: ordinal {} named for ranks {} and {} (ranks that share a GPU: --device)", d,
                                j, i);
    }
  }
  std::unique_ptr<CudaBackend> backend(new CudaBackend(*driver, world, options));
  backend->choose_exchange();
  return backend;
}

void CudaBackend::choose_exchange() {
  bool device = world_ > 1 && options_.exchange == CudaBackendOptions::Exchange::Device;
  if (device && !NcclExchange::sum_kernel_built()) {
    note_ = "this dsv41-rt was built without nvcc (no rank-ordered sum kernel), so the exchange is host-staged";
    device = false;
  }
  // Ranks on one GPU share its context, so one graph per phase can hold them all.
  if (device && options_.devices.empty()) {
    exchange_ = std::make_unique<GroupExchange>(driver_, world_);
    return;
  }
  // Ranks on several GPUs: NCCL between the threads, its collectives captured in each rank's graphs.
  if (device) {
    NcclComm::set_environment_defaults();
    auto nccl = NcclLibrary::open();
    auto comms = nccl.is_ok() ? NcclComm::init_all(**nccl, options_.devices)
                              : Result<std::vector<std::unique_ptr<NcclComm>>>(nccl.status());
    if (comms.is_ok()) {
      comms_ = std::move(comms).value();
      nccl_exchanges_.resize(comms_.size());
      return;
    }
    note_ = "NCCL between the rank threads could not be had (" + comms.status().message() + "), so the exchange is host-staged";
  }
  exchange_ = std::make_unique<HostStagedExchange>(driver_, world_);
}

Result<DeviceExchange*> CudaBackend::exchange_for(int rank) {
  if (exchange_) return exchange_.get();
  DSV41_ASSIGN_OR_RETURN(NcclExchange::SumKernel sum, NcclExchange::load_sum_kernel(driver_));
  std::lock_guard lock(mutex_);
  nccl_exchanges_[rank] = std::make_unique<NcclExchange>(*comms_[rank], std::move(sum));
  return nccl_exchanges_[rank].get();
}

void CudaBackend::abort(const std::string& reason) {
  if (exchange_) exchange_->abort(reason);
  for (const std::unique_ptr<NcclComm>& comm : comms_) comm->abort();  // every rank's pending collectives end
}

Result<std::unique_ptr<RankSession>> CudaBackend::create(const ProgramFile& program) {
  if (program.program().world() != world_)
    return Status::errorf("{}: world {}, but the backend was opened for world {}", program.source(),
                          program.program().world(), world_);
  const int rank = program.program().rank();
  DSV41_TRY(driver_.use_device(device_of(rank)));  // current on this rank's thread
  DSV41_ASSIGN_OR_RETURN(DeviceExchange * exchange, exchange_for(rank));
  // Ranks boot one at a time: each measures the device's free memory around its own allocations and
  // graph build, which another rank booting on the same GPU meanwhile would blur (and their boot
  // reports stay whole). Boot holds no collective, so the ranks still meet at their first exchange.
  std::lock_guard boot(boot_mutex_);
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<GpuSession> session, boot_session(program, options_, driver_, *exchange));
  if (options_.log && !note_.empty()) {
    std::fprintf(options_.log, "rank %d: %s\n", rank, note_.c_str());
    std::fflush(options_.log);
  }
  return std::unique_ptr<RankSession>(std::move(session));
}

}  // namespace dsv41::gpu
