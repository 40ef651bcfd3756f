// compiler/emit/rank_phases.h — every phase of one rank: decode windows of each planned row bucket and prefill segments.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/program_calls.h"
#include "compiler/plan/serving_settings.h"
#include "compiler/plan/weight_plan.h"

namespace dsv41 {

// `engram_token_map` (token id → compressed id, from the model's tokenizer.json) goes into the
// Engram hash calls; empty when it was not built (a folder without tokenizer.json: such a program
// plans and fingerprints, and the runtime refuses to run its Engram calls).
CallLists emit_call_lists(const ModelConfig& config, const RankShare& share, const WeightPlan& weights,
                          const ServingSettings& settings, std::span<const int32_t> engram_token_map = {});

// Whether the phases carry DSpark (taps, draft rings, Draft phases): drafting is planned
// (draft_tokens > 0) on a model with draft blocks, for every target (the DSpark ops have kernels).
bool emits_dspark(const ModelConfig& config, const ServingSettings& settings);
// Rows of the planned Draft phases: dspark_block_size rows a sequence, for each decode bucket of at
// most `slots` sequences and for all of them.
std::vector<int64_t> draft_phase_rows(const ModelConfig& config, const ServingSettings& settings);

}  // namespace dsv41
