// runtime/cpu/cpu_session.h — one rank of the CPU backend: its weights, slot state and arenas, and the loop that runs a phase's calls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "common/program_calls.h"
#include "common/program_file.h"
#include "common/status.h"
#include "runtime/cpu/host_tables.h"
#include "runtime/cpu/op_context.h"
#include "runtime/cpu/weight_store.h"
#include "runtime/rank_session.h"

namespace dsv41::cpu {

class CpuSession final : public RankSession {
 public:
  // Reads the program's call lists, checks the model folder is the pack it was planned from (digest,
  // data present), loads every weight a call names, and allocates the slots' state (zeroed) and one
  // arena per phase; host-resident tables (Engram) are memory-mapped, not loaded. `exchange` must outlive
  // the session and be shared by all ranks of the world.
  static Result<std::unique_ptr<CpuSession>> create(const ProgramFile& program, const std::string& model_dir,
                                                    Exchange& exchange);
  // The same with call lists supplied by the caller instead of the program's own (tests, tools).
  static Result<std::unique_ptr<CpuSession>> create(const ProgramFile& program, CallLists calls,
                                                    const std::string& model_dir, Exchange& exchange);

  const ModelConfig& config() const { return config_; }
  int rank() const override { return rank_; }
  int world() const { return world_; }
  int slots() const { return slots_; }
  int64_t context() const { return context_; }
  const std::vector<Phase>& phases() const override { return calls_.phases; }
  const Phase* find_phase(const std::string& name) const override;
  const WeightStore& weights() const { return weights_; }

  // Runs every call of `phase` (one of phases()) over `statics`, int32 [phase.rows, kStaticsFields].
  // Active rows must name a slot below slots() and a position below context(). Stops at the first
  // failure with context "phase NAME call #i (op)"; a collective aborted by another rank fails too.
  Status run(const Phase& phase, const std::vector<int32_t>& statics) override;
  // A scratch buffer of `phase`'s arena by name (e.g. "logits", F32 [rows, vocab] after a run).
  Result<TensorView> output(const Phase& phase, const std::string& buffer_name);
  // Rows of the phase's "logits" buffer (RankSession::read_logits); refuses rows outside the phase.
  Status read_logits(const Phase& phase, int64_t first_row, int64_t rows, float* out) override;
  // Zeroes a slot's state (a new sequence). Aborts on a slot outside 0..slots()-1: a caller bug.
  void reset_slot(int slot) override;

 private:
  CpuSession(Exchange& exchange) : exchange_(exchange) {}
  Result<size_t> phase_index(const Phase& phase) const;
  Status check_statics(const Phase& phase, const std::vector<int32_t>& statics) const;

  friend class SessionCallContext;
  Exchange& exchange_;
  ModelConfig config_;
  int rank_ = 0, world_ = 1, slots_ = 0;
  int64_t context_ = 0;
  CallLists calls_;
  WeightStore weights_;
  HostTables host_tables_;
  std::vector<uint8_t> state_;  // slots_ blocks of calls_.state_bytes_per_slot
  std::vector<std::vector<uint8_t>> arenas_;  // one per phase, reused between runs
};

}  // namespace dsv41::cpu
