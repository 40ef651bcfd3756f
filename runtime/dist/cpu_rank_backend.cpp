// runtime/dist/cpu_rank_backend.cpp — the CPU backend as a rank process: a CpuSession whose exchanges go through the socket exchange.
#include <optional>

#include "runtime/cpu/cpu_session.h"
#include "runtime/dist/rank_backend.h"
#include "runtime/dist/socket_exchange.h"

namespace dsv41::dist {
namespace {

class CpuRankBackend final : public RankBackend {
 public:
  explicit CpuRankBackend(std::string model_dir) : model_dir_(std::move(model_dir)) {}
  std::string arch() const override { return "cpu"; }
  Result<std::unique_ptr<RankSession>> create(const ProgramFile& program, Control& control) override {
    exchange_.emplace(control);  // outlives the session: the backend lives longer than what it makes
    DSV41_ASSIGN_OR_RETURN(auto session, cpu::CpuSession::create(program, model_dir_, *exchange_));
    return std::unique_ptr<RankSession>(std::move(session));
  }
  // The socket exchange waits on the control links, which the failure already woke.
  void abort(const std::string&) override {}

 private:
  std::string model_dir_;
  std::optional<SocketExchange> exchange_;
};

}  // namespace

std::unique_ptr<RankBackend> cpu_rank_backend(const std::string& model_dir) {
  return std::make_unique<CpuRankBackend>(model_dir);
}

}  // namespace dsv41::dist
