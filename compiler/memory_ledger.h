// compiler/memory_ledger.h — the device memory one rank needs: weights by rule, per-slot state, activations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/model_config.h"
#include "common/rank_share.h"
#include "compiler/weight_plan.h"

namespace dsv41 {

struct ServingSettings {
  int64_t context = 65536;       // tokens a slot can hold
  int slots = 8;                 // sequences served at once
  std::vector<int64_t> prefill_rows = {2048};  // prefill segment sizes; the first is the default
  std::vector<int64_t> decode_rows = {1, 2, 4, 8, 16};
  // BF16: activations and caches are rounded where docs/model.md §2 says. F32: nothing is rounded,
  // the "check mode" in which two implementations agree to fp32 accuracy.
  DType activations = DType::BF16;
};

struct MemoryLedger {
  // Device bytes of the weights in their stored formats (weights and scales), each tensor rounded up
  // to kDeviceTensorAlignment; host tables in their stored bytes.
  uint64_t weights_replicated = 0, weights_split = 0, weights_host = 0;
  uint64_t state_per_slot = 0, state = 0;
  uint64_t activations = 0;
  uint64_t total = 0;  // device bytes: weights not on the host + state + activations
  uint64_t limit = 0;  // 0: unchecked
};

// `state_per_slot` and `activations` come from the emitted call lists: the state layout and the
// largest phase arena (plus its statics block), so the ledger is exact.
MemoryLedger build_ledger(const WeightPlan& plan, uint64_t state_per_slot, int slots, uint64_t activations,
                          uint64_t limit);
// A readable multi-line table of the ledger.
std::string ledger_text(const MemoryLedger& ledger);
// Refuses a rank whose total exceeds its limit, printing the ledger.
Status check_fits(const MemoryLedger& ledger, const RankShare& share, const std::string& limit_source);

std::string gib_text(uint64_t bytes);

}  // namespace dsv41
