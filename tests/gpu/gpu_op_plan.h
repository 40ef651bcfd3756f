// tests/gpu/gpu_op_plan.h — what the GPU op test checks: header-only packs synthesised from the
// fixtures, each rank's call lists emitted and bound to kernels, and one representative call per
// distinct variant key; with the test's environment (run seed, filter, dry run, scratch folder).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "compiler/emit/rank_phases.h"
#include "compiler/kernels/kernel_plan.h"
#include "compiler/program/rank_planner.h"
#include "compiler/synth/synth_pack.h"
#include "tests/gpu/gpu_op_inputs.h"

namespace dsv41::gpu_test {

// $name when set and not empty, else nullptr.
const char* env_text(const char* name);

// DSV41_GPU_DRY: everything but the GPU.
bool dry_run();

// DSV41_GPU_SEED, else random; one value for the whole process.
uint64_t run_seed();

// A folder for this process's packs and kernel cache, removed at exit.
const std::filesystem::path& scratch_dir();

// A header-only pack of `fixture` written to a temp folder and read back (config and headers).
Result<ModelInputs> synth_inputs(const std::string& fixture, SynthFormat format, int shards);

// One rank's emitted and bound call lists.
struct RankLists {
  std::string label;  // "tiny act=bf16 world 2 rank 1"
  int world = 1, rank = 0;
  ServingSettings settings;
  WeightPlan weights;
  CallLists calls;
  KernelPlan plan;
  std::map<int64_t, int64_t> cache_ratio;
};

// Emits `rank`'s call lists of `world` under `settings` and binds them to kernels for `target`; ops
// without a kernel are dropped from the lists and named in `without_kernel`.
Result<std::shared_ptr<RankLists>> plan_lists(const ModelInputs& inputs, const std::string& label, int world, int rank,
                                              const ServingSettings& settings, const Target& target,
                                              std::set<std::string>& without_kernel);

// One variant key and the call that represents it.
struct Case {
  std::string key;
  std::shared_ptr<const RankLists> lists;
  size_t phase = 0, call = 0;
  PlannedVariant variant;
  std::string where;
};

// "<lists label>, phase <name> (<rows> rows), call <index> (<op>)".
std::string where_of(const RankLists& r, size_t p, size_t c);

// "" or, for ops whose kernels take another path past a row count (the experts' grouped decode path
// and the products' GEMV up to 16 rows, the tiled GEMMs above; the split decode rows), the row class:
// such a variant keeps one case in each class (up to 16, up to 64, a ragged count up to 1024, a prefill
// segment above; hc_mix and hc_collapse_norm one at 1, 2-8 and 9-16 rows as well; the router one at 1 row
// and one at 2-16).
std::string row_class(const std::string& op, int64_t rows);

// Whether DSV41_GPU_FILTER keeps a variant key: unset keeps all; else the key contains one of its
// '|'-separated texts (DSV41_GPU_FILTER='linear|hc_|router').
bool filter_takes(const std::string& key);

// Adds the calls of `phases` of `r` as candidates, keeping per key (and row class) the one `better` prefers.
template <class Better>
void collect(std::map<std::string, Case>& cases, const std::shared_ptr<const RankLists>& r,
             const std::vector<size_t>& phases, const std::set<std::string>* ops, Better better) {
  for (size_t p : phases) {
    const Phase& phase = r->calls.phases[p];
    for (size_t c = 0; c < phase.calls.size(); ++c) {
      const Call& call = phase.calls[c];
      if (ops && !ops->count(call.op)) continue;
      if (call.launch.variant < 0) continue;
      const PlannedVariant& v = r->plan.variants.at(call.launch.variant);
      if (!filter_takes(v.variant.key)) continue;
      Case candidate{v.variant.key, r, p, c, v, where_of(*r, p, c)};
      const std::string map_key = v.variant.key + row_class(call.op, phase.rows);
      auto it = cases.find(map_key);
      if (it == cases.end()) cases.emplace(map_key, std::move(candidate));
      else if (better(candidate, it->second)) it->second = std::move(candidate);
    }
  }
}

// The weight elements a call reads (to prefer cheap representatives).
int64_t call_weight_elements(const Call& call, const WeightPlan& weights);

int64_t case_weights(const Case& c);

// The case's call with everything the inputs, the CPU op and the launch need.
CallSite site_of(const Case& c);

}  // namespace dsv41::gpu_test
