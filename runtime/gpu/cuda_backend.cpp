// runtime/gpu/cuda_backend.cpp — driver and device checks, and each rank's boot on its own thread.
#include "runtime/gpu/cuda_backend.h"

#include <fmt/ranges.h>

namespace dsv41::gpu {

Result<std::unique_ptr<CudaBackend>> CudaBackend::open(int world, const CudaBackendOptions& options) {
  DSV41_ASSIGN_OR_RETURN(CudaDriver * driver, CudaDriver::open());
  DSV41_ASSIGN_OR_RETURN(const int count, driver->device_count());
  if (options.device < 0 || options.device >= count)
    return Status::errorf("--device {}: this machine has {} CUDA device{} (0..{})", options.device, count,
                          count == 1 ? "" : "s", count - 1);
  if (world < 1) return Status::errorf("world {}: must be at least 1", world);
  if (!options.devices.empty()) {
    if (static_cast<int>(options.devices.size()) != world)
      return Status::errorf("--devices {}: {} ordinal{} for world {} (one per rank)", fmt::join(options.devices, ","),
                            options.devices.size(), options.devices.size() == 1 ? "" : "s", world);
    for (size_t i = 0; i < options.devices.size(); ++i) {
      const int d = options.devices[i];
      if (d < 0 || d >= count)
        return Status::errorf("--devices: ordinal {} (rank {}): this machine has {} CUDA device{} (0..{})", d, i, count,
                              count == 1 ? "" : "s", count - 1);
      for (size_t j = 0; j < i; ++j)
        if (options.devices[j] == d)
          return Status::errorf("--devices: ordinal {} named for ranks {} and {} (ranks that share a GPU: --device)", d,
                                j, i);
    }
  }
  return std::unique_ptr<CudaBackend>(new CudaBackend(*driver, world, options));
}

Result<std::unique_ptr<RankSession>> CudaBackend::create(const ProgramFile& program) {
  if (program.program().world() != exchange_->world())
    return Status::errorf("{}: world {}, but the backend was opened for world {}", program.source(),
                          program.program().world(), exchange_->world());
  DSV41_TRY(driver_.use_device(device_of(program.program().rank())));  // current on this rank's thread
  GpuSessionOptions session_options;
  session_options.model_dir = options_.model_dir;
  session_options.eager = options_.eager;
  session_options.synthetic_seed = options_.synthetic_seed;
  session_options.load.progress = options_.log;
  // Ranks boot one at a time: each measures the device's free memory around its own allocations and
  // graph build, which another rank booting on the same GPU meanwhile would blur. Boot holds no
  // collective, so the ranks still meet at their first exchange.
  std::lock_guard boot(boot_mutex_);
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<GpuSession> session,
                         GpuSession::create(program, session_options, driver_, *exchange_));
  if (options_.log) {
    std::lock_guard lock(mutex_);
    std::fprintf(options_.log, "%s\n", session->boot_report().c_str());
    std::fflush(options_.log);
  }
  return std::unique_ptr<RankSession>(std::move(session));
}

}  // namespace dsv41::gpu
