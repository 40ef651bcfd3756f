// runtime/cpu/cpu_backend.h — the CPU Backend: CpuSessions of one world of ranks-as-threads sharing one in-process exchange.
#pragma once

#include <memory>
#include <string>

#include "runtime/exchange.h"
#include "runtime/rank_session.h"

namespace dsv41::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::string model_dir, int world) : model_dir_(std::move(model_dir)), exchange_(world) {}
  Result<std::unique_ptr<RankSession>> create(const ProgramFile& program) override;
  void abort(const std::string& reason) override { exchange_.abort(reason); }

 private:
  std::string model_dir_;
  InProcessExchange exchange_;
};

// The backend `factory` makes for a world of `world` ranks, or the CPU backend when the factory is empty
// (the default of generate and serve).
Result<std::unique_ptr<Backend>> make_backend(const BackendFactory& factory, const std::string& model_dir, int world);

}  // namespace dsv41::cpu
