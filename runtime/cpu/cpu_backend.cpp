// runtime/cpu/cpu_backend.cpp — makes one rank's CpuSession over the world's shared in-process exchange.
#include "runtime/cpu/cpu_backend.h"

#include "runtime/cpu/cpu_session.h"

namespace dsv41::cpu {

Result<std::unique_ptr<RankSession>> CpuBackend::create(const ProgramFile& program) {
  auto session = CpuSession::create(program, model_dir_, exchange_);
  if (!session.is_ok()) return session.status();
  if (exchange_.aborted()) return Status::error("stopped: another rank failed");
  return std::unique_ptr<RankSession>(std::move(session).value());
}

}  // namespace dsv41::cpu
