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
// `kernels`: the plan compiles kernels for a GPU target, so DSpark is emitted only once its ops have
// kernels (emits_dspark).
CallLists emit_call_lists(const ModelConfig& config, const RankShare& share, const WeightPlan& weights,
                          const ServingSettings& settings, std::span<const int32_t> engram_token_map = {},
                          bool kernels = false);

// Whether the phases carry DSpark (taps, draft rings, Draft phases): drafting is planned
// (draft_tokens > 0) on a model with draft blocks, and, for a plan that compiles kernels, every DSpark
// op has one (none has yet: such a plan drafts by prompt lookup, and dsv41c says so).
bool emits_dspark(const ModelConfig& config, const ServingSettings& settings, bool kernels);
// The DSpark ops with no kernel in kernels/ (what keeps a GPU plan from emitting DSpark).
std::vector<std::string> dspark_ops_without_kernels();
// Rows of the planned Draft phases: dspark_block_size rows a sequence, for each decode bucket of at
// most `slots` sequences and for all of them.
std::vector<int64_t> draft_phase_rows(const ModelConfig& config, const ServingSettings& settings);

}  // namespace dsv41
