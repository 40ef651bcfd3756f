// tests/gpu/gpu_op_plan.cpp — the test's environment and scratch folder, synthesised packs, each
// rank's planned call lists, and the helpers that pick a representative call per variant.
#include "tests/gpu/gpu_op_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "common/kernel_contract.h"
#include "common/rank_share.h"
#include "tests/gpu/gpu_op_values.h"

namespace dsv41::gpu_test {

namespace fs = std::filesystem;

const char* env_text(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool dry_run() { return env_text("DSV41_GPU_DRY") != nullptr; }

uint64_t run_seed() {
  static const uint64_t seed = [] {
    if (const char* env = env_text("DSV41_GPU_SEED")) return static_cast<uint64_t>(std::strtoull(env, nullptr, 0));
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  return seed;
}

namespace {

// The source tree holding fixtures/: $DSV41_SOURCE_DIR, the build's, or a parent of the working
// folder or of the executable (the binary may run on another machine, from a copied tree).
fs::path source_root() {
  auto holds = [](const fs::path& p) {
    std::error_code ec;
    return fs::exists(p / "fixtures/dsv41-tiny/config.json", ec);
  };
  if (const char* env = env_text("DSV41_SOURCE_DIR"); env && holds(env)) return env;
  if (holds(DSV41_SOURCE_DIR)) return DSV41_SOURCE_DIR;
  std::error_code ec;
  for (fs::path start : {fs::current_path(ec), fs::read_symlink("/proc/self/exe", ec).parent_path()})
    for (fs::path p = start; !p.empty(); p = p.parent_path()) {
      if (holds(p)) return p;
      if (p == p.root_path()) break;
    }
  return {};
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

// A folder for this process's packs and kernel cache, removed at exit.
const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("dsv41-gpu-op-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  static const struct Remover {
    ~Remover() {
      std::error_code ec;
      if (!std::getenv("DSV41_KEEP_TEST_DIRS")) fs::remove_all(dir, ec);
    }
  } remover;
  return dir;
}

bool filter_takes(const std::string& key) {
  const char* filter = env_text("DSV41_GPU_FILTER");
  if (!filter) return true;
  std::stringstream texts(filter);
  for (std::string text; std::getline(texts, text, '|');)
    if (!text.empty() && key.find(text) != std::string::npos) return true;
  return false;
}

std::string row_class(const std::string& op, int64_t rows) {
  // kernels/index_select.cuh kSplitRows, kernels/router.cuh kRouterRows, kernels/hc_mix.cuh kMixRows: a
  // row's work split over blocks, merged by its last block; hc_collapse_norm splits a row at the same
  // counts with no merge (each block sums the whole row itself and writes its slice). A block a row above.
  // hc_mix and hc_collapse_norm are also checked at a middling count and at the most (tiny decode.r1, r8
  // and r16).
  constexpr int64_t kSplitRows = 16;
  if (op == "hc_mix" || op == "hc_collapse_norm") {
    if (rows > kSplitRows) return " (a block a row)";
    return rows == 1 ? " (split rows: 1)" : rows <= 8 ? " (split rows: 2-8)" : " (split rows: 9-16)";
  }
  if (op == "index_select") return rows <= kSplitRows ? " (split rows)" : " (a block a row)";
  // The router at one row: warps 1-3 form the products, warp 0 adds them (kernels/router_products.cuh).
  if (op == "router") return rows > kSplitRows ? " (a block a row)" : rows == 1 ? " (split rows: 1)" : " (split rows)";
  // kernels/sparse_attention.cuh: decode rows split their keys over blocks (most splits at one row),
  // larger phases take a block a (row, head group).
  if (op == "sparse_attention")
    return rows > kSplitRows ? " (a block a row)" : rows == 1 ? " (split rows: 1)" : " (split rows: 2-16)";
  constexpr int64_t kDecodeRows = 16;  // kernels/moe_pairs.cuh kMoeRows, kernels/gemv.cuh kGemvRows
  if (op != "moe_experts" && op != "shared_expert" && op != "linear" && op != "grouped_linear") return "";
  // kernels/gemv.cuh kGemvFewRows: BF16 products of wide matrices at 1-4 rows run the CUDA-core body.
  constexpr int64_t kFewRows = 4;
  if ((op == "linear" || op == "grouped_linear") && rows <= kFewRows) return " (decode rows 1-4)";
  // Above 16 rows the tiled tensor-core GEMMs (kernels/gemm_tile.cuh): whole 64-row tiles, a ragged
  // count, and a full prefill segment.
  if (rows <= kDecodeRows) return " (decode rows)";
  if (rows <= 64) return " (tiled, <= 64 rows)";
  return rows <= 1024 ? " (tiled, ragged rows)" : " (tiled, prefill rows)";
}

// A header-only pack of `fixture` written to a temp folder and read back (config and headers).
Result<ModelInputs> synth_inputs(const std::string& fixture, SynthFormat format, int shards) {
  const fs::path root = source_root();
  if (root.empty()) return Status::error("fixtures/ not found (set DSV41_SOURCE_DIR to the source tree)");
  const fs::path config_path = root / "fixtures" / fixture / "config.json";
  const std::string text = read_text(config_path);
  if (text.empty()) return Status::errorf("{}: cannot read", config_path.string());
  DSV41_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(text, config_path.string()));
  const fs::path dir = scratch_dir() / ("pack-" + fixture);
  SynthPackOptions options;
  options.out_dir = dir.string();
  options.format = format;
  options.headers_only = true;
  options.seed = 4141;
  options.shards = shards;
  DSV41_TRY(write_synth_pack(config, text, options));
  auto inputs = ModelInputs::read(dir.string());
  std::error_code ec;
  fs::remove_all(dir, ec);
  // Header-only packs have no tokenizer.json: Engram's hash calls get a synthetic token map.
  if (inputs.is_ok() && config.has_engram())
    for (int64_t id = 0; id < config.vocab_size; ++id)
      inputs->engram_token_map.push_back(static_cast<int32_t>((id * 7) % config.engram_compressed_vocab_size));
  return inputs;
}

Result<std::shared_ptr<RankLists>> plan_lists(const ModelInputs& inputs, const std::string& label, int world, int rank,
                                              const ServingSettings& requested, const Target& target,
                                              std::set<std::string>& without_kernel) {
  // The defaults filled in (context 0 is the model's default context), then checked, as dsv41c plan does.
  DSV41_ASSIGN_OR_RETURN(const ServingSettings settings, resolve_settings(inputs.config, requested));
  auto r = std::make_shared<RankLists>();
  r->label = fmt::format("{} world {} rank {}", label, world, rank);
  r->world = world;
  r->rank = rank;
  r->settings = settings;
  DSV41_ASSIGN_OR_RETURN(RankShare share, plan_share(inputs.config, world, rank));
  r->weights = slice_weights(inputs.match, inputs.pack, share);
  r->calls = emit_call_lists(inputs.config, share, r->weights, settings, inputs.engram_token_map);
  for (const Phase& phase : r->calls.phases)
    for (const Call& call : phase.calls) {
      auto record = [&](const char* arg, int64_t ratio) {
        if (const Arg* a = call.find_arg(arg); a && a->kind == ArgKind::State) r->cache_ratio[a->ints[0]] = ratio;
      };
      if (call.op == "compress") {
        record("cache", call.constant("ratio"));
        record("index_cache", call.constant("ratio"));
      } else if (call.op == "index_select") {
        record("index_cache", call.constant("ratio"));
      }
    }
  // Ops whose kernel is not written yet are left out (and reported), so the others are still checked.
  for (Phase& phase : r->calls.phases)
    std::erase_if(phase.calls, [&](const Call& call) {
      if (find_contract(call.op)) return false;
      without_kernel.insert(call.op);
      return true;
    });
  DSV41_ASSIGN_OR_RETURN(r->plan, plan_kernels(r->calls, r->weights, target, rank));
  return r;
}

std::string where_of(const RankLists& r, size_t p, size_t c) {
  const Phase& phase = r.calls.phases[p];
  return fmt::format("{}, phase {} ({} rows), call {} ({})", r.label, phase.name, phase.rows, c, phase.calls[c].op);
}

int64_t call_weight_elements(const Call& call, const WeightPlan& weights) {
  int64_t total = 0;
  for (const Arg& a : call.args) {
    if (a.kind != ArgKind::Weight && a.kind != ArgKind::WeightList) continue;
    for (int64_t i : a.ints)
      if (i >= 0 && i < static_cast<int64_t>(weights.tensors.size())) total += numel_of(fp32_shape(weights.tensors[i]));
  }
  return total;
}

int64_t case_weights(const Case& c) {
  return call_weight_elements(c.lists->calls.phases[c.phase].calls[c.call], c.lists->weights);
}

CallSite site_of(const Case& c) {
  CallSite site;
  site.lists = &c.lists->calls;
  site.phase = &c.lists->calls.phases[c.phase];
  site.call = &site.phase->calls[c.call];
  site.weights = &c.lists->weights;
  site.settings = c.lists->settings;
  site.rank = c.lists->rank;
  site.world = c.lists->world;
  site.cache_ratio = c.lists->cache_ratio;
  return site;
}

}  // namespace dsv41::gpu_test
