// runtime/gpu/session_boot.h — one rank's GpuSession booted from the CUDA backend's options, its boot report logged.
#pragma once

#include <memory>

#include "common/program_file.h"
#include "common/status.h"
#include "runtime/gpu/cuda_backend.h"
#include "runtime/gpu/gpu_session.h"

namespace dsv41::gpu {

// The session options `options` give: the model folder or the synthetic seed, eager, and the weight
// load's progress on options.log.
GpuSessionOptions gpu_session_options(const CudaBackendOptions& options);

// GpuSession::create with gpu_session_options(options) (`alone`: a rank of a bigger world run by
// itself, GpuSessionOptions::alone), on the calling thread's current device; then the session's boot
// report on options.log (nothing when it is null).
Result<std::unique_ptr<GpuSession>> boot_session(const ProgramFile& program, const CudaBackendOptions& options,
                                                 CudaDriver& driver, DeviceExchange& exchange, bool alone = false);

}  // namespace dsv41::gpu
