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

Result<std::unique_ptr<Backend>> make_backend(const BackendFactory& factory, const std::string& model_dir, int world) {
  if (factory) return factory(world);
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(model_dir, world));
}

}  // namespace dsv41::cpu
