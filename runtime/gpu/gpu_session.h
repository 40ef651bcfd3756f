// runtime/gpu/gpu_session.h — one rank of the CUDA backend: its stream, kernels, weights, state and arena
// on the device, and its phases replayed as captured CUDA graphs (or launched call by call with eager).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/program_calls.h"
#include "common/program_file.h"
#include "common/status.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device_exchange.h"
#include "runtime/gpu/device_layout.h"
#include "runtime/gpu/engram_step.h"
#include "runtime/gpu/kernel_launcher.h"
#include "runtime/gpu/phase_graphs.h"
#include "runtime/rank_session.h"

namespace dsv41::gpu {

struct GpuSessionOptions {
  std::string model_dir;
  bool eager = false;  // launch every call on each run instead of replaying graphs
  std::optional<uint64_t> synthetic_seed;  // fill the weights from this seed; no file is read
  LoadOptions load;    // readers, staging size, progress
  // A rank of a bigger world run by itself (dsv41-rt bench --alone, the per-rank case): its exchanges
  // have no peer, so exchange_sum stores this rank's own partial and exchange_gather launches nothing
  // (the other ranks' columns stay zero). Its logits mean nothing.
  bool alone = false;
};

class GpuSession final : public RankSession {
 public:
  // On the calling thread, whose current context is the rank's device (CudaDriver::use_device):
  // checks the program's kernels were compiled for this device's arch, creates the stream, loads
  // every kernel (all resolved before any weight is read), compares what it will allocate with the
  // device's free memory (refusing a plan that cannot fit), loads the stored weights (or fills them
  // from the synthetic seed),
  // allocates state (zeroed), arena, statics and error words, and captures the graphs.
  // `exchange` must outlive the session and be shared by all ranks of the world.
  static Result<std::unique_ptr<GpuSession>> create(const ProgramFile& program, const GpuSessionOptions& options,
                                                    CudaDriver& driver, DeviceExchange& exchange);
  ~GpuSession() override;

  int rank() const override { return rank_; }
  const std::vector<Phase>& phases() const override { return calls_.phases; }
  const Phase* find_phase(const std::string& name) const override;
  // Writes the statics, replays the phase (segment by segment, exchanges between), synchronises and
  // checks every call's error word: a non-zero one fails naming the phase, call and op.
  Status run(const Phase& phase, const std::vector<int32_t>& statics) override;
  Status read_logits(const Phase& phase, int64_t first_row, int64_t rows, float* out) override;

  // run() in three steps, for measuring tools (dsv41-rt bench): `stage` checks and writes the statics
  // and zeroes the error words on stream(); `enqueue` replays the phase on stream() over the
  // staged statics without waiting, as often as called (with an `observer`: call by call, see
  // PhaseGraphs::replay); `finish` waits and checks the error words.
  Status stage(const Phase& phase, const std::vector<int32_t>& statics);
  Status enqueue(const Phase& phase, const CallObserver* observer = nullptr);
  Status finish(const Phase& phase);
  CUstream stream() const { return stream_; }
  CudaDriver& driver() const { return driver_; }
  const DeviceLayout& layout() const { return layout_; }
  int slots() const { return slots_; }
  int64_t context() const { return context_; }
  void reset_slot(int slot) override;

  // The bytes of a buffer of the phase's arena by name, as the last run left them (tests, tools).
  Result<std::vector<uint8_t>> read_buffer(const Phase& phase, const std::string& name);

  // What boot measured and built, several lines (the ledger beside the measured memory, graphs).
  const std::string& boot_report() const { return boot_report_; }
  struct BootMeasure {
    uint64_t allocated = 0;                                   // what the session allocated itself
    uint64_t free_before = 0, free_after_load = 0, free_after_graphs = 0;  // cuMemGetInfo
    size_t graphs = 0;
    double graph_seconds = 0;
  };
  const BootMeasure& boot_measure() const { return measure_; }

 private:
  GpuSession(CudaDriver& driver, DeviceExchange& exchange) : driver_(driver), exchange_(exchange) {}
  Result<size_t> phase_index(const Phase& phase) const;
  Status check_statics(const Phase& phase, const std::vector<int32_t>& statics) const;
  Status check_errors(size_t index);

  CudaDriver& driver_;
  DeviceExchange& exchange_;
  GroupExchange* group_ = nullptr;  // ranks on one GPU: phases run through the world's graphs
  int rank_ = 0, world_ = 1, slots_ = 0;
  int64_t context_ = 0, vocab_ = 0;
  bool eager_ = false;
  CallLists calls_;
  DeviceLayout layout_;  // the bindings' CallEnv reads weight formats from it
  CUstream stream_ = nullptr;
  std::unique_ptr<KernelLauncher> launcher_;
  DeviceBuffer weights_, tables_, state_, arena_, statics_, errors_, exchange_staging_;
  std::unique_ptr<EngramStep> engram_;  // configs with Engram: the step's table rows
  std::vector<PhaseGraphs> graphs_;  // one per phase
  std::vector<int32_t> error_words_;  // host copy, the largest phase's call count
  std::string boot_report_;
  BootMeasure measure_;
};

}  // namespace dsv41::gpu
