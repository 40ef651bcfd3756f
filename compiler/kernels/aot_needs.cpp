// compiler/kernels/aot_needs.cpp — per-rank variant sets and their union, as text and JSON.
#include "compiler/kernels/aot_needs.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>


namespace dsv41 {

Result<AotNeeds> aot_needs(const ModelInputs& inputs, const PlanOptions& options) {
  AotNeeds needs;
  PlanOptions settled = options;
  DSV41_ASSIGN_OR_RETURN(settled.settings, settle_settings(inputs, options, &needs.warnings));
  std::set<std::string> all;
  DSV41_ASSIGN_OR_RETURN(std::vector<KernelPlan> plans, bind_every_rank(inputs, settled));
  for (int rank = 0; rank < settled.world; ++rank) {
    RankNeeds r{rank, {}};
    for (const PlannedVariant& v : plans[rank].variants) {
      r.variants.push_back({v.variant.key, v.launches});
      all.insert(v.variant.key);
    }
    needs.ranks.push_back(std::move(r));
  }
  needs.union_keys.assign(all.begin(), all.end());
  return needs;
}

std::string aot_needs_json(const AotNeeds& needs) {
  nlohmann::ordered_json out;
  out["ranks"] = nlohmann::ordered_json::array();
  for (const RankNeeds& r : needs.ranks) {
    nlohmann::ordered_json rank;
    rank["rank"] = r.rank;
    rank["variants"] = nlohmann::ordered_json::array();
    rank["launches"] = nlohmann::ordered_json::array();
    for (const VariantNeed& v : r.variants) {
      rank["variants"].push_back(v.key);
      rank["launches"].push_back(v.launches);
    }
    out["ranks"].push_back(rank);
  }
  out["union"] = needs.union_keys;
  return out.dump(1) + "\n";
}

std::string aot_needs_text(const AotNeeds& needs) {
  std::map<std::string, std::string> holders;  // key -> "0,1,2"
  for (const RankNeeds& r : needs.ranks)
    for (const VariantNeed& v : r.variants) holders[v.key] += (holders[v.key].empty() ? "" : ",") + std::to_string(r.rank);
  std::string text;
  for (const RankNeeds& r : needs.ranks) {
    int64_t launches = 0;
    for (const VariantNeed& v : r.variants) launches += v.launches;
    text += fmt::format("rank {}: {} variants, {} launches over all phases\n", r.rank, r.variants.size(), launches);
    for (const VariantNeed& v : r.variants) text += fmt::format("  {:>7}  {}\n", v.launches, v.key);
  }
  text += fmt::format("union: {} variants (ranks that launch each)\n", needs.union_keys.size());
  for (const std::string& key : needs.union_keys) text += fmt::format("  {:<12} {}\n", "ranks " + holders[key], key);
  return text;
}

}  // namespace dsv41
