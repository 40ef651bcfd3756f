// compiler/kernels/kernel_plan.cpp — call → variant binding and the per-phase bound checks.
#include "compiler/kernels/kernel_plan.h"

#include <algorithm>
#include <map>

#include "common/kernel_launch.h"

namespace dsv41 {
namespace {

CallEnv env_of(const CallLists& calls, const Phase& phase, const WeightPlan& weights) {
  CallEnv env;
  env.rows = phase.rows;
  env.buffer = [&calls, &phase](const Arg& a) { return buffer_of(calls, phase, a); };
  env.weight_shape = [&weights](const Arg& a) -> std::vector<int64_t> {
    const int64_t i = a.ints.empty() ? -1 : a.ints[0];
    if (i < 0 || i >= static_cast<int64_t>(weights.tensors.size())) return {};
    return weights.tensors[i].local_shape;
  };
  env.weight_format = [&weights](int64_t i) -> std::optional<WeightFormat> {
    if (i < 0 || i >= static_cast<int64_t>(weights.tensors.size())) return std::nullopt;
    return weight_format_of(weights.tensors[i].encoding, weights.tensors[i].dtype);
  };
  return env;
}

// The first bound the launch breaks, or "" when it fits.
std::string broken_bound(const LaunchDims& d, const Target& target) {
  if (d.block < 1 || d.block > kMaxBlockThreads)
    return fmt::format("block of {} threads, the limit is {}", d.block, kMaxBlockThreads);
  if (d.grid[0] < 1 || d.grid[0] > kMaxGridX) return fmt::format("grid x {} outside 1..{}", d.grid[0], kMaxGridX);
  for (int i = 1; i < 3; ++i)
    if (d.grid[i] < 1 || d.grid[i] > kMaxGridYZ)
      return fmt::format("grid {} {} outside 1..{}", i == 1 ? "y" : "z", d.grid[i], kMaxGridYZ);
  if (target.shared_memory_per_block > 0 && d.dynamic_shared > target.shared_memory_per_block)
    return fmt::format("shared memory {} bytes exceeds target {}'s {} per block", d.dynamic_shared, target.name,
                       target.shared_memory_per_block);
  for (const LaunchBound& b : d.bounds) {
    const int64_t limit = b.limit > 0 ? b.limit : target.shared_memory_per_block;
    if (limit > 0 && b.value > limit) return fmt::format("{} {} exceeds the limit {}", b.what, b.value, limit);
  }
  return "";
}

}  // namespace

std::string variant_arch(const Target& target) { return target.arch.empty() ? "none" : target.arch; }

Result<KernelPlan> plan_kernels(CallLists& calls, const WeightPlan& weights, const Target& target, int rank) {
  const std::string arch = variant_arch(target);
  std::map<std::string, PlannedVariant> by_key;
  std::vector<std::vector<std::string>> keys(calls.phases.size());  // each call's key, indexed below
  KernelPlan plan;
  for (size_t p = 0; p < calls.phases.size(); ++p) {
    Phase& phase = calls.phases[p];
    const CallEnv env = env_of(calls, phase, weights);
    std::string refusal;
    for (size_t c = 0; c < phase.calls.size(); ++c) {
      Call& call = phase.calls[c];
      const std::string where = fmt::format("rank {}, phase {}, call {} ({})", rank, phase.name, c, call.op);
      if (target.arch.empty() && !find_contract(call.op)) {  // no kernel yet: the CPU backend runs it, unbound
        keys[p].emplace_back();
        continue;
      }
      auto variant = variant_of(call, env, arch);
      if (!variant.is_ok()) return variant.status().with_context(where);
      auto dims = launch_dims(call, env);
      if (!dims.is_ok()) return dims.status().with_context(where);
      if (const std::string broken = broken_bound(*dims, target); !broken.empty() && refusal.empty())
        refusal = where + ": " + broken;
      PlannedVariant& pv = by_key[variant->key];
      if (pv.threads == 0) {
        pv.variant = *variant;
        pv.threads = dims->block;
      } else if (pv.threads != dims->block) {
        return Status::errorf("{}: kernel {} launched with {} threads here and {} elsewhere; a block size must depend "
                              "only on template parameters (docs/kernels.md)",
                              where, variant->key, dims->block, pv.threads);
      }
      pv.launches += 1;
      pv.max_dynamic_shared = std::max(pv.max_dynamic_shared, dims->dynamic_shared);
      call.launch.block = dims->block;
      std::copy(dims->grid, dims->grid + 3, call.launch.grid);
      call.launch.dynamic_shared = dims->dynamic_shared;
      keys[p].push_back(variant->key);
    }
    if (!refusal.empty()) plan.refusals.push_back({p, phase.kind, phase.rows, refusal});
  }
  for (auto& [key, pv] : by_key) plan.variants.push_back(pv);  // std::map: sorted by key
  // Variant indices follow the sorted order.
  std::map<std::string, int32_t> index;
  for (size_t i = 0; i < plan.variants.size(); ++i) index[plan.variants[i].variant.key] = static_cast<int32_t>(i);
  for (size_t p = 0; p < calls.phases.size(); ++p)
    for (size_t c = 0; c < calls.phases[p].calls.size(); ++c)
      calls.phases[p].calls[c].launch.variant = keys[p][c].empty() ? -1 : index.at(keys[p][c]);
  return plan;
}

}  // namespace dsv41
