// compiler/program/rank_planner.h — plans one rank end to end: share, weight plan, ledger, program bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "common/pack_index.h"
#include "common/program_calls.h"
#include "compiler/kernels/kernel_build.h"
#include "compiler/kernels/kernel_plan.h"
#include "compiler/plan/memory_ledger.h"
#include "compiler/plan/serving_settings.h"
#include "compiler/plan/targets.h"
#include "compiler/plan/weight_plan.h"

namespace dsv41 {

// A model folder read once (config and headers) and planned for many ranks.
struct ModelInputs {
  std::string config_json;
  ModelConfig config;
  PackIndex pack;
  PackMatch match;  // the pack checked against the config's inventory
  // Engram's token map (token id → compressed id) from the folder's tokenizer.json, built by the
  // caller (compiler/tokens/, which links ICU); empty when the config has no Engram or the folder no
  // tokenizer.json. It goes into the programs' Engram hash calls.
  std::vector<int32_t> engram_token_map;
  static Result<ModelInputs> read(const std::string& model_dir);
};

struct PlanOptions {
  int world = 1;
  Target target;
  ServingSettings settings;
  uint64_t memory_limit = 0;  // bytes; 0 takes the target's device memory
  BuildOptions build;         // NVRTC: cache folder, parallel jobs, progress (targets with an arch)
};

struct RankPlan {
  RankShare share;
  WeightPlan weights;
  CallLists calls;
  MemoryLedger ledger;
  KernelPlan kernels;                  // the variants the phases launch
  std::vector<CompiledKernel> compiled;  // their cubins, in kernels.variants order (empty for --target none)
  std::vector<uint8_t> program;        // the flatbuffer bytes
};

// Settles the serving settings every rank of the world can launch: each rank's phases are bound to
// their kernels and checked against the target. A decode bucket or the default (first) prefill size
// that breaks a bound on any rank is an error naming the rank, phase, op and bound; an optional
// prefill size that does is dropped, with a warning in `warnings`. Header-only: no NVRTC.
Result<ServingSettings> settle_settings(const ModelInputs& inputs, const PlanOptions& options,
                                        std::vector<std::string>* warnings);

// Every rank's calls bound to their kernels (header-only, no NVRTC), ranks planned in parallel;
// the first error in rank order.
Result<std::vector<KernelPlan>> bind_every_rank(const ModelInputs& inputs, const PlanOptions& options);

// settle_settings' decision: an error for a decode bucket or the default prefill size; every other
// refused prefill size is dropped (once, with a warning).
Result<ServingSettings> apply_refusals(const ServingSettings& settings, const std::vector<PhaseRefusal>& refused,
                                       const std::string& target, std::vector<std::string>* warnings);

Result<RankPlan> plan_rank(const ModelInputs& inputs, const PlanOptions& options, int rank);
// Digest of every setting all ranks of one deployment must share.
uint64_t agreement_digest(const ModelInputs& inputs, const PlanOptions& options);

}  // namespace dsv41
