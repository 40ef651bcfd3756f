// runtime/gpu/session_boot.h — a rank's device ordinal checked, its GpuSession booted from the CUDA backend's options.
#pragma once

#include <memory>
#include <string>

#include "common/program_file.h"
#include "common/status.h"
#include "runtime/gpu/cuda_backend.h"
#include "runtime/gpu/gpu_session.h"

namespace dsv41::gpu {

// Refuses a CUDA ordinal outside the `count` devices this process sees, naming `what` ("--device 3")
// and the range; `note` is added inside the parentheses (a hint for rank processes).
Status check_device_ordinal(const std::string& what, int device, int count, const std::string& note = "");

// The session options `options` give: the model folder or the synthetic seed, eager, and the weight
// load's progress on options.log.
GpuSessionOptions gpu_session_options(const CudaBackendOptions& options);

// GpuSession::create with gpu_session_options(options) (`alone`: a rank of a bigger world run by
// itself, GpuSessionOptions::alone), on the calling thread's current device; then the session's boot
// report on options.log (nothing when it is null).
Result<std::unique_ptr<GpuSession>> boot_session(const ProgramFile& program, const CudaBackendOptions& options,
                                                 CudaDriver& driver, DeviceExchange& exchange, bool alone = false);

}  // namespace dsv41::gpu
