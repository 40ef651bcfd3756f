// compiler/emit/rank_phases.cpp — one phase per decode bucket and prefill size, all over one state layout.
#include "compiler/emit/rank_phases.h"

#include <set>

#include "compiler/emit/phase_emitter.h"

namespace dsv41 {

bool emits_dspark(const ModelConfig& config, const ServingSettings& settings) {
  return settings.draft_tokens > 0 && config.has_dspark();
}

std::vector<int64_t> draft_phase_rows(const ModelConfig& config, const ServingSettings& settings) {
  std::set<int64_t> sequences{settings.slots};
  for (int64_t rows : settings.decode_rows)
    if (rows <= settings.slots) sequences.insert(rows);
  std::vector<int64_t> rows;
  for (int64_t n : sequences) rows.push_back(n * config.dspark_block_size);
  return rows;
}

CallLists emit_call_lists(const ModelConfig& config, const RankShare& share, const WeightPlan& weights,
                          const ServingSettings& settings, std::span<const int32_t> engram_token_map) {
  const bool dspark = emits_dspark(config, settings);
  const StateLayout state = plan_state_layout(config, settings.context, settings.activations, settings.draft_tokens,
                                              settings.cache_format, dspark);
  EmitInputs inputs{config, share, weights, state, {}, {}, settings.activations};
  inputs.engram_token_map = engram_token_map;
  inputs.dspark = dspark;
  if (config.has_engram()) {
    auto hashes = engram_layer_hashes(config);
    DSV41_CHECK(hashes.is_ok());  // resolve_options (compiler/program/rank_planner.cpp) refused a config whose primes disagree
    inputs.engram = std::move(hashes).value();
  }
  inputs.weight_index.reserve(weights.tensors.size());
  for (size_t i = 0; i < weights.tensors.size(); ++i) inputs.weight_index.emplace(weights.tensors[i].name, static_cast<int>(i));
  for (int r = 0; r < share.world; ++r) inputs.vocab_widths.push_back(split_evenly(config.vocab_blocks, share.world, r).size() * kColumnBlock);
  CallLists lists;
  lists.state_buffers = state.buffers;
  lists.state_bytes_per_slot = state.bytes_per_slot;
  for (int64_t rows : settings.decode_rows) lists.phases.push_back(PhaseEmitter(inputs, PhaseKind::Decode, rows).emit());
  for (int64_t rows : settings.prefill_rows) lists.phases.push_back(PhaseEmitter(inputs, PhaseKind::Prefill, rows).emit());
  if (dspark)
    for (int64_t rows : draft_phase_rows(config, settings)) lists.phases.push_back(PhaseEmitter(inputs, PhaseKind::Decode, rows, true).emit());
  return lists;
}

}  // namespace dsv41
