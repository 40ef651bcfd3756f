// compiler/memory_ledger.h — the device memory one rank needs: weights by rule, per-slot state, activations.
#pragma once

#include <cstdint>
#include <string>

#include "common/model_config.h"
#include "common/rank_share.h"
#include "compiler/weight_plan.h"

namespace dsv41 {

struct ServingSettings {
  int64_t context = 65536;       // tokens a slot can hold
  int slots = 8;                 // sequences served at once
  int64_t prefill_rows = 2048;   // rows of one prefill segment
  std::vector<int64_t> decode_rows = {1, 2, 4, 8, 16};
};

struct MemoryLedger {
  uint64_t weights_replicated = 0, weights_split = 0, weights_host = 0;
  uint64_t state_per_slot = 0, state = 0;
  uint64_t activations = 0;
  uint64_t total = 0;  // device bytes: weights not on the host + state + activations
  uint64_t limit = 0;  // 0: unchecked
};

// Bytes of one slot's state at the planned context: window rings, compressed and index-key caches
// of the kv sources, compressor tails, candidate blocks.
uint64_t state_bytes_per_slot(const ModelConfig& config, int64_t context);
// An estimate of the activation arena for the largest phase (exact once call lists exist).
uint64_t activation_bytes(const ModelConfig& config, const RankShare& share, const ServingSettings& settings);

MemoryLedger build_ledger(const ModelConfig& config, const RankShare& share, const WeightPlan& plan,
                          const ServingSettings& settings, uint64_t limit);
// A readable multi-line table of the ledger.
std::string ledger_text(const MemoryLedger& ledger);
// Refuses a rank whose total exceeds its limit, printing the ledger.
Status check_fits(const MemoryLedger& ledger, const RankShare& share, const std::string& limit_source);

std::string gib_text(uint64_t bytes);

}  // namespace dsv41
