// runtime/gpu/cuda_rank_backend.cpp — one CUDA rank process: device, NCCL id over the control connection, communicator, watch, session.
#include "runtime/gpu/cuda_rank_backend.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "runtime/gpu/session_boot.h"

namespace dsv41::gpu {
namespace {

// A rank process's session may be driven from another thread than the one that booted it (serve:
// the scheduler's thread), and a CUDA context is current per thread: make the device current on a
// thread the first time it calls. Rounds come one at a time, so no lock.
class ThreadBindingSession final : public RankSession {
 public:
  ThreadBindingSession(std::unique_ptr<GpuSession> session, CudaDriver& driver, int device)
      : session_(std::move(session)), driver_(driver), device_(device), bound_(std::this_thread::get_id()) {}
  int rank() const override { return session_->rank(); }
  const std::vector<Phase>& phases() const override { return session_->phases(); }
  const Phase* find_phase(const std::string& name) const override { return session_->find_phase(name); }
  Status run(const Phase& phase, const std::vector<int32_t>& statics) override {
    DSV41_TRY(bind());
    return session_->run(phase, statics);
  }
  Status read_logits(const Phase& phase, int64_t first_row, int64_t rows, float* out) override {
    DSV41_TRY(bind());
    return session_->read_logits(phase, first_row, rows, out);
  }
  void reset_slot(int slot) override {
    if (bind().is_ok()) session_->reset_slot(slot);  // a failed bind fails the round's next run, naming it
  }

 private:
  Status bind() {
    if (std::this_thread::get_id() == bound_) return Status::ok();
    DSV41_TRY(driver_.use_device(device_).with_context("making the rank's device current on a new thread"));
    bound_ = std::this_thread::get_id();
    return Status::ok();
  }
  std::unique_ptr<GpuSession> session_;
  CudaDriver& driver_;
  const int device_;
  std::thread::id bound_;
};

}  // namespace

Result<std::unique_ptr<CudaRankBackend>> CudaRankBackend::open(const CudaRankOptions& options) {
  DSV41_ASSIGN_OR_RETURN(CudaDriver * driver, CudaDriver::open());
  DSV41_ASSIGN_OR_RETURN(const int count, driver->device_count());
  DSV41_TRY(check_device_ordinal(fmt::format("--device {}", options.cuda.device), options.cuda.device, count,
                                 "; `launch --gpus` shows each rank only its own GPU, as device 0"));
  DSV41_TRY(driver->use_device(options.cuda.device));
  DSV41_ASSIGN_OR_RETURN(std::string arch, driver->device_arch());
  return std::unique_ptr<CudaRankBackend>(new CudaRankBackend(*driver, options, std::move(arch)));
}

CudaRankBackend::~CudaRankBackend() { close(); }

void CudaRankBackend::close() {
  if (nccl_exchange_ && options_.time_exchanges) {
    const NcclExchange::Timing& t = nccl_exchange_->timing();
    std::fprintf(stderr, "dsv41-rt: rank %d: %lld NCCL exchanges took %.3f ms (%.1f us each, host-timed, --eager)\n",
                 rank_, static_cast<long long>(t.exchanges), t.seconds * 1e3,
                 t.exchanges ? t.seconds * 1e6 / static_cast<double>(t.exchanges) : 0.0);
  }
  nccl_exchange_ = nullptr;
  exchange_.reset();  // before the communicator it uses
  live_comm_ = nullptr;
  comm_.reset();
}

Status CudaRankBackend::join_communicator(int rank, int world, dist::Control& control) {
  NcclComm::set_environment_defaults();  // defaults only: the user's environment wins
  DSV41_ASSIGN_OR_RETURN(NcclLibrary * nccl, NcclLibrary::open());
  nccl::UniqueId id{};
  if (control.leader()) DSV41_TRY(nccl->check(nccl->ncclGetUniqueId(&id), "ncclGetUniqueId"));
  const std::vector<uint8_t> mine(reinterpret_cast<const uint8_t*>(&id), reinterpret_cast<const uint8_t*>(&id) + sizeof id);
  DSV41_ASSIGN_OR_RETURN(const std::vector<uint8_t> shared, control.share_comm_id(mine));
  std::memcpy(&id, shared.data(), sizeof id);
  DSV41_ASSIGN_OR_RETURN(comm_, NcclComm::init(*nccl, id, rank, world));
  live_comm_ = comm_.get();
  const int grace_ms = options_.nccl_error_grace_ms;
  comm_->watch(options_.nccl_poll_ms, [this, &control, rank, grace_ms](const std::string& reason) {
    // A dead peer is the control connection's to report (it ends this process with exit 3 meanwhile).
    std::this_thread::sleep_for(std::chrono::milliseconds(grace_ms));
    control.fail(dist::rank_reason(rank, reason));
    if (NcclComm* comm = live_comm_.load()) comm->abort();  // this rank's waits end with an error, and it exits naming the reason
  });
  DSV41_ASSIGN_OR_RETURN(NcclExchange::SumKernel sum, NcclExchange::load_sum_kernel(driver_));
  auto exchange = std::make_unique<NcclExchange>(*comm_, std::move(sum));
  if (options_.time_exchanges) exchange->time_exchanges(driver_);
  nccl_exchange_ = exchange.get();
  exchange_ = std::move(exchange);
  return Status::ok();
}

Result<DeviceExchange*> CudaRankBackend::join(const ProgramFile& program, dist::Control& control) {
  const int world = program.program().world();
  rank_ = program.program().rank();
  if (options_.time_exchanges && !options_.cuda.eager)
    return Status::error("--time-exchanges needs --eager: a replayed graph cannot be timed exchange by exchange");
  if (world > 1) {
    DSV41_TRY(join_communicator(rank_, world, control));
  } else {
    exchange_ = std::make_unique<HostStagedExchange>(driver_, 1);  // world 1 makes no exchange
  }
  return exchange_.get();
}

Result<std::unique_ptr<RankSession>> CudaRankBackend::create(const ProgramFile& program, dist::Control& control) {
  DSV41_ASSIGN_OR_RETURN(DeviceExchange * exchange, join(program, control));
  DSV41_ASSIGN_OR_RETURN(std::unique_ptr<GpuSession> session, boot_session(program, options_.cuda, driver_, *exchange));
  return std::unique_ptr<RankSession>(new ThreadBindingSession(std::move(session), driver_, options_.cuda.device));
}

void CudaRankBackend::abort(const std::string&) {
  if (NcclComm* comm = live_comm_.load()) comm->abort();
}

}  // namespace dsv41::gpu
