// compiler/program/rank_planner.cpp — one rank's plan, refused with the failing bound before any GPU is touched.
#include "compiler/program/rank_planner.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>
#include <fstream>
#include <sstream>

#include <fmt/ranges.h>

#include "common/engram_hash.h"
#include "common/hashing.h"
#include "compiler/emit/rank_phases.h"
#include "compiler/program/program_writer.h"

namespace dsv41 {

Result<ModelInputs> ModelInputs::read(const std::string& model_dir) {
  ModelInputs inputs;
  const std::string path = model_dir + "/config.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::errorf("{}: cannot open (is {} a model folder?)", path, model_dir);
  std::stringstream text;
  text << in.rdbuf();
  inputs.config_json = text.str();
  DSV41_ASSIGN_OR_RETURN(inputs.config, parse_model_config(inputs.config_json, path));
  DSV41_ASSIGN_OR_RETURN(inputs.pack, PackIndex::open(model_dir));
  DSV41_ASSIGN_OR_RETURN(inputs.match, match_pack(inputs.config, inputs.pack));
  return inputs;
}

uint64_t agreement_digest(const ModelInputs& inputs, const PlanOptions& options) {
  Hasher h;
  h.add(config_digest(inputs.config)).add(inputs.pack.digest()).add(options.target.name);
  h.add_i64(options.world).add_i64(options.settings.context).add_i64(options.settings.slots);
  for (int64_t rows : options.settings.prefill_rows) h.add_i64(rows);
  h.add(static_cast<uint64_t>(options.settings.activations));
  for (int64_t rows : options.settings.decode_rows) h.add_i64(rows);
  // Only when drafting: programs planned without it keep the digests they always had.
  if (options.settings.draft_tokens) h.add_i64(options.settings.draft_tokens);
  // Likewise only for the official cache format: bf16 programs keep their digests.
  if (options.settings.cache_format != CacheFormat::BF16) h.add_i64(static_cast<int64_t>(options.settings.cache_format));
  if (!inputs.engram_token_map.empty())
    h.add(hash_bytes(inputs.engram_token_map.data(), inputs.engram_token_map.size() * sizeof(int32_t)));
  return h.digest();
}

namespace {

// NVRTC for every variant of the rank, then each checked against the target's limits.
Result<std::vector<CompiledKernel>> compile_rank_kernels(const KernelPlan& kernels, const PlanOptions& options) {
  std::vector<KernelJob> jobs;
  for (const PlannedVariant& v : kernels.variants) jobs.push_back({v.variant, v.threads});
  DSV41_ASSIGN_OR_RETURN(std::vector<CompiledKernel> compiled, build_kernels(jobs, options.build));
  for (size_t i = 0; i < compiled.size(); ++i) {
    DSV41_TRY(check_resources(compiled[i], options.target));
    const int64_t shared = compiled[i].resources.static_shared + kernels.variants[i].max_dynamic_shared;
    const int64_t limit = options.target.shared_memory_per_block;
    if (limit > 0 && shared > limit)
      return Status::errorf("kernel {}: shared memory {} bytes ({} static + {} dynamic) exceeds target {}'s {} per block",
                            compiled[i].variant.key, shared, compiled[i].resources.static_shared,
                            kernels.variants[i].max_dynamic_shared, options.target.name, limit);
  }
  return compiled;
}

// The options with the settings' defaults filled in and checked (resolve_settings).
Result<PlanOptions> resolve_options(const ModelInputs& inputs, const PlanOptions& options) {
  PlanOptions resolved = options;
  DSV41_ASSIGN_OR_RETURN(resolved.settings, resolve_settings(inputs.config, options.settings));
  // The Engram layout before any emission: each table's primes must sum to its engram_num_embeddings
  // and the multipliers must be known (refusals naming both numbers). After the token map's check,
  // which dsv41c plan runs first, so a wrong compressed count is reported as such.
  if (inputs.config.has_engram()) DSV41_TRY(engram_layer_hashes(inputs.config).status());
  return resolved;
}

}  // namespace

Result<std::vector<KernelPlan>> bind_every_rank(const ModelInputs& inputs, const PlanOptions& requested) {
  DSV41_ASSIGN_OR_RETURN(const PlanOptions options, resolve_options(inputs, requested));
  std::vector<std::optional<Result<KernelPlan>>> results(options.world);
  std::atomic<int> next{0};
  auto work = [&] {
    for (int rank = next++; rank < options.world; rank = next++) {
      auto share = plan_share(inputs.config, options.world, rank);
      if (!share.is_ok()) {
        results[rank] = share.status();
        continue;
      }
      const WeightPlan weights = slice_weights(inputs.match, inputs.pack, *share);
      CallLists calls = emit_call_lists(inputs.config, *share, weights, options.settings, inputs.engram_token_map);
      results[rank] = plan_kernels(calls, weights, options.target, rank);
    }
  };
  const int threads = std::clamp<int>(static_cast<int>(std::thread::hardware_concurrency()), 1, options.world);
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  std::vector<KernelPlan> plans;
  for (auto& r : results) {
    if (!r->is_ok()) return r->status();
    plans.push_back(std::move(*r).value());
  }
  return plans;
}

Result<ServingSettings> apply_refusals(const ServingSettings& settings, const std::vector<PhaseRefusal>& refused,
                                       const std::string& target, std::vector<std::string>* warnings) {
  ServingSettings settled = settings;
  std::vector<int64_t> dropped;
  for (const PhaseRefusal& r : refused) {
    const bool optional = r.kind == PhaseKind::Prefill && r.rows != settings.prefill_rows.front();
    if (!optional)
      return Status::errorf("{}; {} cannot be served on target {}", r.message,
                            r.kind == PhaseKind::Decode ? fmt::format("decode bucket {}", r.rows)
                                                        : fmt::format("the default prefill segment {}", r.rows),
                            target);
    if (std::find(dropped.begin(), dropped.end(), r.rows) == dropped.end()) {
      dropped.push_back(r.rows);
      warnings->push_back(fmt::format("setting prefill_rows = {}: dropped: {}", r.rows, r.message));
    }
  }
  std::erase_if(settled.prefill_rows,
                [&](int64_t rows) { return std::find(dropped.begin(), dropped.end(), rows) != dropped.end(); });
  return settled;
}

Result<ServingSettings> settle_settings(const ModelInputs& inputs, const PlanOptions& requested,
                                        std::vector<std::string>* warnings) {
  DSV41_ASSIGN_OR_RETURN(const PlanOptions options, resolve_options(inputs, requested));
  DSV41_ASSIGN_OR_RETURN(std::vector<KernelPlan> plans, bind_every_rank(inputs, options));
  std::vector<PhaseRefusal> refused;
  for (const KernelPlan& plan : plans) refused.insert(refused.end(), plan.refusals.begin(), plan.refusals.end());
  return apply_refusals(options.settings, refused, options.target.name, warnings);
}

Result<RankPlan> plan_rank(const ModelInputs& inputs, const PlanOptions& requested, int rank) {
  DSV41_ASSIGN_OR_RETURN(const PlanOptions options, resolve_options(inputs, requested));
  RankPlan plan;
  DSV41_ASSIGN_OR_RETURN(plan.share, plan_share(inputs.config, options.world, rank));
  plan.weights = slice_weights(inputs.match, inputs.pack, plan.share);
  const uint64_t limit = options.memory_limit ? options.memory_limit : options.target.device_memory;
  plan.calls = emit_call_lists(inputs.config, plan.share, plan.weights, options.settings, inputs.engram_token_map);
  DSV41_ASSIGN_OR_RETURN(plan.kernels, plan_kernels(plan.calls, plan.weights, options.target, rank));
  if (!plan.kernels.refusals.empty())
    return Status::errorf("{} (dsv41c plan settles the settings first and drops optional prefill sizes that do not fit)",
                          plan.kernels.refusals.front().message);
  uint64_t arena = 0;
  for (const Phase& phase : plan.calls.phases)
    arena = std::max<uint64_t>(arena, phase.arena_bytes + phase.rows * kStaticsFields * sizeof(int32_t));
  plan.ledger = build_ledger(plan.weights, plan.calls.state_bytes_per_slot, options.settings.slots, arena, limit);
  const ModelConfig& c = inputs.config;
  plan.ledger.host_copy_per_row = static_cast<uint64_t>(c.engram_layer_ids.size() * c.engram_columns *
                                                        (c.engram_head_dim + c.engram_head_dim / kScaleBlock));
  const std::string limit_source =
      options.memory_limit ? "setting memory_limit" : fmt::format("target {} device memory", options.target.name);
  // Checked before compiling (a plan that cannot fit is refused without NVRTC), and again with the
  // kernels' module globals, which only the cubins tell.
  DSV41_TRY(check_fits(plan.ledger, plan.share, limit_source));
  if (!options.target.arch.empty()) {
    // A kernel's message names the kernel; which rank's plan needed it is added here.
    auto compiled = compile_rank_kernels(plan.kernels, options);
    if (!compiled.is_ok())
      return compiled.status().with_context(fmt::format("rank {} of world {}", rank, options.world));
    plan.compiled = std::move(compiled).value();
    // The session loads each of the rank's variants as its own module (runtime/gpu/kernel_launcher.cpp).
    uint64_t globals = 0;
    for (const CompiledKernel& k : plan.compiled) globals += static_cast<uint64_t>(k.resources.module_globals);
    add_kernel_globals(plan.ledger, globals);
    DSV41_TRY(check_fits(plan.ledger, plan.share, limit_source));
  }
  plan.program = build_program(inputs, options, plan);
  return plan;
}

}  // namespace dsv41
