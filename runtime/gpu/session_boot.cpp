// runtime/gpu/session_boot.cpp — the ordinal check, session options from the backend's, and the logged boot.
#include "runtime/gpu/session_boot.h"

#include <cstdio>

#include <fmt/format.h>

namespace dsv41::gpu {

Status check_device_ordinal(const std::string& what, int device, int count, const std::string& note) {
  if (device >= 0 && device < count) return Status::ok();
  return Status::errorf("{}: this process sees {} CUDA device{} (0..{}{})", what, count, count == 1 ? "" : "s",
                        count - 1, note);
}

GpuSessionOptions gpu_session_options(const CudaBackendOptions& options) {
  GpuSessionOptions session;
  session.model_dir = options.model_dir;
  session.eager = options.eager;
  session.synthetic_seed = options.synthetic_seed;
  session.load.progress = options.log;
  return session;
}

Result<std::unique_ptr<GpuSession>> boot_session(const ProgramFile& program, const CudaBackendOptions& options,
                                                 CudaDriver& driver, DeviceExchange& exchange, bool alone) {
  GpuSessionOptions session_options = gpu_session_options(options);
  session_options.alone = alone;
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<GpuSession> session,
                         GpuSession::create(program, session_options, driver, exchange));
  if (options.log) {
    std::fprintf(options.log, "%s\n", session->boot_report().c_str());
    std::fflush(options.log);
  }
  return session;
}

}  // namespace dsv41::gpu
