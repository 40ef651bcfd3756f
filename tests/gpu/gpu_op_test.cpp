// tests/gpu/gpu_op_test.cpp — every kernel variant the planner binds, checked against the CPU op on
// the same bytes (ctest label "gpu": `ctest -LE gpu` leaves it out; without a driver it skips).
//
// Flow: header-only packs of the tiny fixture (in both pack formats: bf16, and the release formats
// FP8 32x32 tiles / FP4 rows of 32 with UE8M0 scales), of the tiny Engram and tiny draft fixtures
// (release formats; the draft one planned with 5 drafts a round, for the DSpark ops) and of the release config are synthesised
// in-process; their call lists are emitted and bound to kernels for target h200 (as
// compiler/kernels/aot_needs.cpp does): tiny worlds 1-4, every rank, activations bf16 and f32; release world
// 4, ranks 0 and 2, the heavy ops of the largest decode phase of at most 16 rows. Each distinct
// variant key keeps one representative call (the smallest phase of at most 64 rows for the tiny, the
// fewest weight elements; the experts' variants one per row class, since their kernels switch paths
// at 16 rows: tests/gpu/gpu_op_plan.h row_class), the variants are compiled with NVRTC (cache: $DSV41_CACHE or the test's
// temp folder), and each call runs on random valid inputs (tests/gpu/gpu_op_inputs.h) on the CPU and
// on the GPU from identical bytes (weights: the GPU gets the stored codes and scales, the CPU op the
// same bytes dequantized by the CPU backend's path); every buffer the op writes is compared (tolerances in
// gpu_op_compare.h: bf16 |g−c| ≤ 2e-2·|c| + 1e-3·max|c|, f32 ≤ 1e-3·|c| + 1e-4·max|c|, I32
// identical) and the call's error word must be 0. The products' bf16 outputs (linear, grouped_linear)
// must also lie within one bf16 step of the CPU's (tests/gpu/gpu_op_steps.h).
//
// Environment: DSV41_GPU_SEED=N reruns with a given run seed (printed, and named in every failure);
// DSV41_GPU_FILTER=text checks only keys containing text (several: 'a|b'); DSV41_GPU_DRY=1 runs everything but the GPU
// (planning, inputs, CPU ops) on a machine without a driver; DSV41_GPU_SELFTEST=1 flips one bit of
// every GPU output before comparing (every variant must then fail: the comparisons are live);
// DSV41_GPU_STEPS=1 prints every float output's distance in bf16 steps; DSV41_SOURCE_DIR overrides the source
// tree holding fixtures/; DSV41_CACHE is the NVRTC cache folder.
//
// Pieces: tests/gpu/gpu_op_plan.h (packs, planning, one call per variant), gpu_op_inputs.h (inputs
// and the CPU run), gpu_op_device.h (compile, load, the GPU run), gpu_op_compare.h (tolerances),
// gpu_op_check.h (the per-variant check). This file: the tests.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>

#include <gtest/gtest.h>

#include "common/hashing.h"
#include "common/kernel_contract.h"
#include "common/numeric_formats.h"
#include "tests/gpu/gpu_op_check.h"
#include "tests/gpu/gpu_op_compare.h"
#include "tests/gpu/gpu_op_device.h"
#include "tests/gpu/gpu_op_inputs.h"
#include "tests/gpu/gpu_op_plan.h"
#include "tests/gpu/gpu_op_steps.h"
#include "tests/gpu/gpu_op_values.h"

namespace dsv41::gpu_test {
namespace {

using gpu::KernelLauncher;

constexpr int64_t kTinyMaxRows = 64;    // tiny: the largest phase of at most this many rows represents a key
constexpr int64_t kReleaseMaxRows = 16; // release: the largest decode phase of at most this many rows
// Floors on what a run checks, so that no test passes empty or loses a weight format unnoticed
// (measured 2026-11-30: see docs/perf.md; a planner change that lowers them must say why).
constexpr int kTinyMinVariants = 178;        // both pack formats, worlds 1-4, activations bf16 and f32; the
                                             // expert variants twice, on each side of 16 rows (row_class); and
                                             // the 12 DSpark variants of the tiny draft fixture (branch dsgpu)
constexpr int kTinyMinQuantized = 50;        // of which read an fp8_tile32 or fp4_row32 weight
constexpr int kReleaseMinVariants = 17;      // the heavy ops of release world 4, ranks 0 and 2 (and rank 0's
                                             // official-cache variants)
constexpr int kReleaseMinQuantized = 7;
// rope: its release shapes take a path the tiny's do not (several blocks a row); hc_collapse_norm at the
// release width. No shared_expert: decode phases (at most kMoeRows rows) run it inside moe_experts.
const std::set<std::string> kReleaseOps = {"moe_experts", "sparse_attention", "index_select",
                                           "compress",    "linear",           "hc_mix",
                                           "router",      "rope",             "hc_collapse_norm"};

// ---- the summary ----

struct Counts {
  int tiny = 0, release = 0;
};
Counts& counts() {
  static Counts c;
  return c;
}

class SummaryEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    const Counts& c = counts();
    if (c.tiny + c.release == 0) return;
    std::printf("checked %d variants (tiny worlds 1-4: %d, release world 4: %d)%s, run seed %llu\n", c.tiny + c.release,
                c.tiny, c.release, dry_run() ? " on the CPU only (DSV41_GPU_DRY)" : "",
                static_cast<unsigned long long>(run_seed()));
  }
};
[[maybe_unused]] ::testing::Environment* const kSummary = ::testing::AddGlobalTestEnvironment(new SummaryEnvironment);

// The tiny fixture's variants at worlds 1-4 (activations bf16 and f32), one call each: the call of
// the largest phase of at most kTinyMaxRows rows (more rows, more sequences per step; else the
// smallest phase), then the one reading the fewest weight elements.
// `draft_tokens` > 0 plans drafting (a model with DSpark blocks: taps, draft rings, Draft phases).
void collect_tiny(const ModelInputs& inputs, const std::string& pack, const Target& target,
                  std::map<std::string, Case>& cases, std::set<std::string>& without_kernel, int64_t draft_tokens = 0) {
  auto better = [](const Case& a, const Case& b) {
    auto rank_rows = [](int64_t rows) { return rows <= kTinyMaxRows ? -rows : rows; };
    const int64_t ra = rank_rows(a.lists->calls.phases[a.phase].rows), rb = rank_rows(b.lists->calls.phases[b.phase].rows);
    if (ra != rb) return ra < rb;
    const int64_t wa = case_weights(a), wb = case_weights(b);
    if (wa != wb) return wa < wb;
    // Then the larger world and the later rank (exchange_gather's widths differ per rank).
    if (a.lists->world != b.lists->world) return a.lists->world > b.lists->world;
    return a.lists->rank > b.lists->rank;
  };
  // Both cache formats: the official one adds the packed variants of the cache ops (window_store,
  // compress, index_select, sparse_attention; dtype_<cache>=packed in their keys).
  for (CacheFormat cache_format : {CacheFormat::BF16, CacheFormat::Official})
  for (DType activations : {DType::BF16, DType::F32}) {
    ServingSettings settings;
    settings.context = 256;
    settings.slots = 4;
    // The tiled products' row classes (row_class): 200 rows are a whole and a ragged tile of linear's 128
    // rows and of the experts' 64.
    settings.prefill_rows = {2048, 200, 64, 16};
    settings.activations = activations;
    settings.cache_format = cache_format;
    settings.draft_tokens = draft_tokens;
    const std::string caches = cache_format == CacheFormat::BF16 ? "" : " caches=official";
    for (int world = 1; world <= 4; ++world)
      for (int rank = 0; rank < world; ++rank) {
        auto r = plan_lists(inputs, fmt::format("tiny {} pack act={}{}", pack, dtype_name(activations), caches), world,
                            rank, settings, target, without_kernel);
        ASSERT_TRUE(r.is_ok()) << "tiny world " << world << " rank " << rank << ": " << r.status().message();
        std::vector<size_t> phases((*r)->calls.phases.size());
        std::iota(phases.begin(), phases.end(), size_t{0});
        collect(cases, *r, phases, nullptr, better);
      }
  }
}

// Both pack formats: the weight format is part of the key, so the release-format pack adds the
// native FP8 / FP4 variants of every op that reads a Linear or expert weight.
TEST(GpuOps, TinyWorldsOneToFourMatchTheCpuOps) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  std::map<std::string, Case> cases;
  std::set<std::string> without_kernel;
  for (SynthFormat format : {SynthFormat::BF16, SynthFormat::Release}) {
    auto inputs = synth_inputs("dsv41-tiny", format, 1);
    ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
    collect_tiny(*inputs, format == SynthFormat::BF16 ? "bf16" : "release-format", s.target, cases, without_kernel);
  }
  // The Engram ops (hash, lookback, FP8-row gather, gate) from the tiny Engram fixture: its tables are
  // FP8 rows as the release stores them (host tables are FP8 only).
  auto engram = synth_inputs("dsv41-tiny-engram", SynthFormat::Release, 1);
  ASSERT_TRUE(engram.is_ok()) << engram.status().message();
  collect_tiny(*engram, "engram release-format", s.target, cases, without_kernel);
  // The DSpark ops (stream_mean, block_attention, markov_logits) from the tiny draft fixture planned
  // with 5 drafts a round: its Draft phases of 5-20 rows hold 1-4 sequences of the block.
  auto draft = synth_inputs("dsv41-tiny-draft", SynthFormat::Release, 1);
  ASSERT_TRUE(draft.is_ok()) << draft.status().message();
  collect_tiny(*draft, "draft release-format", s.target, cases, without_kernel, 5);
  report_without_kernel(without_kernel);
  const int quantized = quantized_keys(cases);
  std::printf("tiny: %zu cases (distinct variants; experts once a row class), %d reading FP8/FP4 weights\n",
              cases.size(), quantized);
  const bool filtered = env_text("DSV41_GPU_FILTER") != nullptr;
  if (!filtered) {  // DSV41_GPU_FILTER leaves cases out on purpose
    for (const char* op : {"engram_hash{", "engram_lookback{", "engram_gather{", "engram_gate{", "stream_mean{",
                           "block_attention{", "markov_logits{"})
      EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const auto& kv) { return kv.first.rfind(op, 0) == 0; }))
          << op << " has no case";
  }
  // The official cache format's packed variants of the cache ops (also when the filter asks for them).
  if (!filtered || std::string(env_text("DSV41_GPU_FILTER")) == "packed") {
    for (const char* op : {"window_store{", "compress{", "index_select{", "sparse_attention{"}) {
      EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const auto& kv) {
        return kv.first.rfind(op, 0) == 0 && kv.first.find("=packed") != std::string::npos;
      })) << op << " has no packed (official cache format) case";
    }
  }
  if (!filtered) {
    EXPECT_GE(static_cast<int>(cases.size()), kTinyMinVariants);
    EXPECT_GE(quantized, kTinyMinQuantized);
  }
  const int checked = check_cases(cases, s.target, s.device ? &*s.device : nullptr);
  if (!filtered) {
    EXPECT_GE(checked, kTinyMinVariants) << "variants that did not compile or load were not checked";
  }
  counts().tiny += checked;
}

// Bad statics never reach memory: every active row names a slot the state buffers do not have; each
// kernel that indexes state by slot reports ERR_STATICS, and those that write state (compress,
// window_store) leave every byte of it as it was.
TEST(GpuOps, AStaticsSlotBeyondTheStateIsRefusedAndNothingIsWritten) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  if (!s.device) GTEST_SKIP() << "needs the GPU (DSV41_GPU_DRY)";
  auto inputs = synth_inputs("dsv41-tiny", SynthFormat::BF16, 1);
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  std::map<std::string, Case> all, cases;
  std::set<std::string> without_kernel;
  collect_tiny(*inputs, "bf16", s.target, all, without_kernel);
  for (const auto& [key, c] : all)
    for (const char* op : {"window_store", "compress", "index_select", "sparse_attention"})
      if (key.rfind(std::string(op) + "{", 0) == 0) cases.emplace(key, c);
  ASSERT_GE(cases.size(), 4u);
  std::vector<const Case*> list;
  for (const auto& [key, c] : cases) list.push_back(&c);
  std::unique_ptr<KernelLauncher> launcher;
  const std::vector<int32_t> kernel_of = compile_and_load(list, s.target, *s.device, launcher);
  for (size_t i = 0; i < list.size(); ++i) {
    SCOPED_TRACE(list[i]->key);
    ASSERT_GE(kernel_of[i], 0);
    const CallSite site = site_of(*list[i]);
    auto in = make_inputs(site, mix_seed(run_seed(), hash_text(list[i]->key)));
    ASSERT_TRUE(in.is_ok()) << in.status().message();
    for (size_t r = 0; r * 4 < in->image.statics.size(); ++r)
      if (in->image.statics[r * 4 + 1] >= 0) in->image.statics[r * 4 + 1] = in->slots;  // one past the last slot
    Image gpu = in->image;
    int32_t error_word = -1;
    const Status status = run_gpu(*s.device, *launcher, kernel_of[i], site, *in, gpu, error_word);
    ASSERT_TRUE(status.is_ok()) << status.message();
    EXPECT_EQ(error_word, 5) << "expected ERR_STATICS, got " << error_code_name(error_word);
    EXPECT_TRUE(gpu.state == in->image.state) << "a state buffer was written";
  }
  std::printf("bad slots refused by %zu variants\n", list.size());
}

// The bench fixture (release formats, or `format`) planned for rank 0 of `world`: context 1024, `slots`
// slots, the prefill segments `prefill_rows` and the decode phases `decode_rows`; ops without a kernel
// are added to `without_kernel` when given.
Result<std::shared_ptr<RankLists>> plan_bench(const GpuSetup& s, const std::string& label, int world, int slots,
                                              std::vector<int64_t> decode_rows,
                                              SynthFormat format = SynthFormat::Release,
                                              std::vector<int64_t> prefill_rows = {100},
                                              std::set<std::string>* without_kernel = nullptr) {
  auto inputs = synth_inputs("dsv41-bench", format, 1);
  if (!inputs.is_ok()) return inputs.status();
  ServingSettings settings;
  settings.context = 1024;
  settings.slots = slots;
  settings.prefill_rows = std::move(prefill_rows);
  settings.decode_rows = std::move(decode_rows);
  std::set<std::string> unreported;
  return plan_lists(*inputs, label, world, 0, settings, s.target, without_kernel ? *without_kernel : unreported);
}

// The bench fixture's grouped output projection at world 4 in a ragged prefill segment of 100 rows: two
// groups of 1024 columns a rank, so the tiled path reads a different x range per column tile (the tiny
// fixture's groups of 8 columns run the GEMV grid instead).
TEST(GpuOps, BenchGroupedProjectionInAPrefillSegmentMatchesTheCpuOp) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  auto r = plan_bench(s, "bench", 4, 2, {1});
  ASSERT_TRUE(r.is_ok()) << "bench world 4 rank 0: " << r.status().message();
  std::vector<size_t> phases;
  for (size_t p = 0; p < (*r)->calls.phases.size(); ++p)
    if ((*r)->calls.phases[p].rows == 100) phases.push_back(p);
  const std::set<std::string> ops = {"grouped_linear"};
  std::map<std::string, Case> cases;
  collect(cases, *r, phases, &ops, [](const Case& a, const Case& b) { return case_weights(a) < case_weights(b); });
  ASSERT_FALSE(cases.empty()) << "no grouped_linear call in the 100-row phase";
  const int checked = check_cases(cases, s.target, s.device ? &*s.device : nullptr);
  EXPECT_EQ(checked, static_cast<int>(cases.size()));
}

// The bench fixture's experts at world 1 in decode phases of 1, 2 and 8 rows, at the sizes the bench
// measures: one set of jobs at one row, several sets of at most 8 jobs at 2 and 8 rows (random ids: about
// 11 and 33 distinct experts), gathered through the group's table (kernels/moe_slices.cuh); the shared
// expert runs in the same launch (moe_experts with shared_w*, the decode phases' form; the K split of few
// phase 1 items is not reached here: 7 experts or more a step give at least 1008 items; see
// gpu_moe_split_test.cpp). One case a phase, since the variant key is the same at every row count.
TEST(GpuOps, BenchExpertsSplitOverBlocksMatchTheCpuOps) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  auto r = plan_bench(s, "bench experts", 1, 8, {1, 2, 8});
  ASSERT_TRUE(r.is_ok()) << "bench world 1 rank 0: " << r.status().message();
  const std::set<std::string> ops = {"moe_experts"};
  int checked = 0, cases_seen = 0;
  for (size_t p = 0; p < (*r)->calls.phases.size(); ++p) {
    const Phase& phase = (*r)->calls.phases[p];
    if (phase.kind != PhaseKind::Decode) continue;
    std::map<std::string, Case> cases;
    collect(cases, *r, {p}, &ops, [](const Case&, const Case&) { return false; });
    cases_seen += static_cast<int>(cases.size());
    checked += check_cases(cases, s.target, s.device ? &*s.device : nullptr);
  }
  EXPECT_EQ(checked, cases_seen);
  if (!env_text("DSV41_GPU_FILTER")) {
    EXPECT_EQ(cases_seen, 3) << "the routed and shared experts at 1, 2 and 8 rows";
  }
  std::printf("bench experts at 1, 2 and 8 rows: %d cases\n", checked);
}

// The tiled products of a 100-row prefill segment (tiny, both packs, world 4 rank 3, bf16 activations)
// with only rows 1-5 active, the first and the last row inactive: every 64-row tile then has whole
// warps of rows past its operand, the pattern in which the FP8 shared expert's tile loads read address
// 0 on an H200 (kernels/gemm_tile.cuh; a prompt of 5 tokens in a 2048-row segment did the same).
TEST(GpuOps, TiledProductsWithFewActiveRowsMatchTheCpuOps) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  constexpr int64_t kRows = 100, kFirstActive = 1, kActive = 5;
  const std::set<std::string> ops = {"linear", "grouped_linear", "moe_experts", "shared_expert"};
  std::map<std::string, Case> cases;
  std::set<std::string> without_kernel;
  for (SynthFormat format : {SynthFormat::BF16, SynthFormat::Release}) {
    auto inputs = synth_inputs("dsv41-tiny", format, 1);
    ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
    ServingSettings settings;
    settings.context = 256;
    settings.slots = 4;
    settings.prefill_rows = {kRows};
    settings.activations = DType::BF16;
    const char* pack = format == SynthFormat::BF16 ? "bf16" : "release-format";
    auto r = plan_lists(*inputs, fmt::format("tiny {} pack, rows 1-5 active", pack), 4, 3, settings, s.target,
                        without_kernel);
    ASSERT_TRUE(r.is_ok()) << "tiny world 4 rank 3: " << r.status().message();
    std::vector<size_t> phases;
    for (size_t p = 0; p < (*r)->calls.phases.size(); ++p)
      if ((*r)->calls.phases[p].rows == kRows) phases.push_back(p);
    collect(cases, *r, phases, &ops, [](const Case& a, const Case& b) { return case_weights(a) < case_weights(b); });
  }
  report_without_kernel(without_kernel);
  if (!env_text("DSV41_GPU_FILTER")) {  // every op, and the FP8 shared expert that faulted
    for (const std::string& op : ops)
      EXPECT_TRUE(
          std::any_of(cases.begin(), cases.end(), [&](const auto& kv) { return kv.first.rfind(op + "{", 0) == 0; }))
          << op << " has no case in the " << kRows << "-row phase";
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [](const auto& kv) {
      return kv.first.rfind("shared_expert{", 0) == 0 && kv.first.find("format_w1=fp8_tile32") != std::string::npos;
    })) << "no FP8 shared expert case";
  }
  const AdjustInputs few_active = [&](CallInputs& in) {
    for (int64_t r = 0; r < kRows; ++r) {
      if (r >= kFirstActive && r < kFirstActive + kActive) continue;
      int32_t* st = in.image.statics.data() + r * kStaticsFields;
      st[kStaticToken] = 0, st[kStaticSlot] = -1, st[kStaticPosition] = 0;
      st[kStaticFirstRow] = static_cast<int32_t>(r);
    }
    in.description += fmt::format("then every row but {}-{} made inactive", kFirstActive, kFirstActive + kActive - 1);
  };
  const int checked = check_cases(cases, s.target, s.device ? &*s.device : nullptr, few_active);
  EXPECT_EQ(checked, static_cast<int>(cases.size()));
  std::printf("tiled products with rows 1-5 of %lld active: %d variants\n", static_cast<long long>(kRows), checked);
}

// Checks rank 0's index_select variants of the release share at world 4, with bf16 and official caches,
// in the phases `phases_of` picks, each call on inputs changed by `adjust_for(its ratio)`.
struct IndexCases {
  int checked = 0, seen = 0;
  std::set<int64_t> modes;
};
IndexCases check_release_index_select(const GpuSetup& s,
                                      const std::function<std::vector<size_t>(const RankLists&)>& phases_of,
                                      const std::function<AdjustInputs(int64_t)>& adjust_for) {
  IndexCases out;
  auto inputs = synth_inputs("dsv41-release", SynthFormat::Release, 8);
  EXPECT_TRUE(inputs.is_ok()) << inputs.status().message();
  if (!inputs.is_ok()) return out;
  const std::set<std::string> ops = {"index_select"};
  std::set<std::string> without_kernel;
  ServingSettings official;
  official.cache_format = CacheFormat::Official;
  for (const ServingSettings& settings : {ServingSettings{}, official}) {
    auto r = plan_lists(*inputs, "release index_select", 4, 0, settings, s.target, without_kernel);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    if (!r.is_ok()) return out;
    for (size_t p : phases_of(**r)) {
      std::map<std::string, Case> cases;
      collect(cases, *r, {p}, &ops, [](const Case&, const Case&) { return false; });
      for (const auto& [key, c] : cases) {
        const Call& call = c.lists->calls.phases[c.phase].calls[c.call];
        out.modes.insert(call.constant("mode"));
        out.checked += check_cases({{key, c}}, s.target, s.device ? &*s.device : nullptr,
                                   adjust_for(call.constant("ratio")));
        ++out.seen;
      }
    }
  }
  report_without_kernel(without_kernel);
  return out;
}

// index_select at the longest fills: the release share's decode calls at one and eight rows with every
// active row at its cache's end (65,536 or 32,768 visible entries), so a row's 128 or 16 slices merge in
// two levels (kernels/index_merge.cuh) and the candidate source keeps 2,048 of 8,192 blocks. The random
// positions of the other tests reach these fills only by chance.
TEST(GpuOps, IndexSelectAtTheCachesEndMatchesTheCpuOp) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  const auto decode_1_8 = [](const RankLists& r) {
    std::vector<size_t> picked;
    for (size_t p = 0; p < r.calls.phases.size(); ++p) {
      const Phase& phase = r.calls.phases[p];
      if (phase.kind == PhaseKind::Decode && (phase.rows == 1 || phase.rows == 8)) picked.push_back(p);
    }
    return picked;
  };
  const auto at_the_end = [](int64_t ratio) -> AdjustInputs {
    return [ratio](CallInputs& in) {
      // index_select's one state argument is index_cache: its entries times the ratio are positions.
      const int64_t limit = in.state_layout.begin()->second.decl->shape.at(0) * ratio;
      for (int64_t row = 0; row < in.rows; ++row) {
        int32_t* st = in.image.statics.data() + row * kStaticsFields;
        if (st[kStaticSlot] >= 0) st[kStaticPosition] = static_cast<int32_t>(limit - in.rows + row);
      }
      in.description += fmt::format("; then row r at position {} - {} + r", limit, in.rows);
    };
  };
  const IndexCases n = check_release_index_select(s, decode_1_8, at_the_end);
  EXPECT_EQ(n.checked, n.seen);
  if (!env_text("DSV41_GPU_FILTER")) {
    EXPECT_GE(n.seen, 8) << "rank 0's index_select variants at 1 and 8 rows";
  }
  std::printf("index_select at the caches' end: %d cases\n", n.checked);
}

// index_select at prefill: the release share's variants (modes 0, 1, 2; bf16 and official caches) in its
// smallest phase of more than 16 rows, which scores on the class path (kernels/index_prefill_scores.cuh),
// with eight rows active at about 20,480 visible entries (the candidate source keeps 2,048 of 2,560
// blocks) and the others inactive, so the CPU op stays near a second a case.
TEST(GpuOps, IndexSelectAtPrefillMatchesTheCpuOp) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  static constexpr int64_t kActive = 8, kEntries = 20480;
  const auto smallest_prefill = [](const RankLists& r) {
    size_t pick = SIZE_MAX;
    for (size_t p = 0; p < r.calls.phases.size(); ++p)
      if (r.calls.phases[p].rows > 16 && (pick == SIZE_MAX || r.calls.phases[p].rows < r.calls.phases[pick].rows))
        pick = p;
    return pick == SIZE_MAX ? std::vector<size_t>{} : std::vector<size_t>{pick};
  };
  const auto prefill = [](int64_t ratio) -> AdjustInputs {
    return [ratio](CallInputs& in) {
      const int64_t limit = in.state_layout.begin()->second.decl->shape.at(0) * ratio;
      const int64_t top = std::min(limit, kEntries * ratio);
      for (int64_t row = 0; row < in.rows; ++row) {
        int32_t* st = in.image.statics.data() + row * kStaticsFields;
        if (row < kActive && st[kStaticSlot] >= 0) {
          st[kStaticPosition] = static_cast<int32_t>(top - kActive + row);
        } else {
          st[kStaticToken] = 0, st[kStaticSlot] = -1, st[kStaticPosition] = 0;
          st[kStaticFirstRow] = static_cast<int32_t>(row);
        }
      }
      in.description += fmt::format("; then rows 0-{} at positions {} - {} + r, the others inactive", kActive - 1, top,
                                    kActive);
    };
  };
  const IndexCases n = check_release_index_select(s, smallest_prefill, prefill);
  EXPECT_EQ(n.checked, n.seen);
  if (!env_text("DSV41_GPU_FILTER")) {
    EXPECT_EQ(n.modes, (std::set<int64_t>{0, 1, 2})) << "rank 0's prefill modes";
  }
  std::printf("index_select at prefill: %d cases\n", n.checked);
}

// sparse_attention's tensor-core path (kernels/sparse_attention_prefill.cuh) at the release shapes:
// world 2 rank 0 (32 heads: two head groups; Dh 512, window 128, topk 0 and 512) in a ragged 100-row
// prefill segment with bf16 caches, and the official caches' CUDA-core path in the same segment. The
// tiny fixture's prefill phases check the tensor-core path at Dh 64 and with head groups of fewer than 16.
TEST(GpuOps, ReleasePrefillAttentionMatchesTheCpuOp) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  constexpr int64_t kRows = 100;
  auto inputs = synth_inputs("dsv41-release", SynthFormat::Release, 8);
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  const std::set<std::string> ops = {"sparse_attention"};
  std::map<std::string, Case> cases;
  std::set<std::string> without_kernel;
  for (CacheFormat format : {CacheFormat::BF16, CacheFormat::Official}) {
    ServingSettings settings;
    settings.prefill_rows = {kRows};
    settings.cache_format = format;
    auto r = plan_lists(*inputs, "release prefill attention", 2, 0, settings, s.target, without_kernel);
    ASSERT_TRUE(r.is_ok()) << "release world 2 rank 0: " << r.status().message();
    std::vector<size_t> phases;
    for (size_t p = 0; p < (*r)->calls.phases.size(); ++p)
      if ((*r)->calls.phases[p].kind != PhaseKind::Decode && (*r)->calls.phases[p].rows == kRows) phases.push_back(p);
    collect(cases, *r, phases, &ops, [](const Case& a, const Case& b) { return case_weights(a) < case_weights(b); });
  }
  report_without_kernel(without_kernel);
  if (!env_text("DSV41_GPU_FILTER")) {
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [](const auto& kv) {
      return kv.first.find("topk=512") != std::string::npos && kv.first.find("=packed") == std::string::npos;
    })) << "no bf16-cache case with selected entries";
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(),
                            [](const auto& kv) { return kv.first.find("=packed") != std::string::npos; }))
        << "no official-cache case";
  }
  const int checked = check_cases(cases, s.target, s.device ? &*s.device : nullptr);
  EXPECT_EQ(checked, static_cast<int>(cases.size()));
  std::printf("sparse_attention in a %lld-row release prefill segment: %d variants\n", static_cast<long long>(kRows),
              checked);
}

TEST(GpuOps, ReleaseWorldFourDecodeMatchesTheCpuOps) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  auto inputs = synth_inputs("dsv41-release", SynthFormat::Release, 8);
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  std::map<std::string, Case> cases;
  std::set<std::string> without_kernel;
  auto better = [](const Case& a, const Case& b) { return case_weights(a) < case_weights(b); };
  // The defaults (context 65536, 8 slots, decode rows 1..16), and rank 0 again with the official cache
  // format (the packed variants of the cache ops at release sizes).
  ServingSettings official;
  official.cache_format = CacheFormat::Official;
  const std::vector<std::pair<int, ServingSettings>> plans = {
      {0, ServingSettings{}}, {2, ServingSettings{}}, {0, official}};
  for (const auto& [rank, settings] : plans) {
    const std::string label = settings.cache_format == CacheFormat::Official ? "release caches=official" : "release";
    auto r = plan_lists(*inputs, label, 4, rank, settings, s.target, without_kernel);
    ASSERT_TRUE(r.is_ok()) << label << " world 4 rank " << rank << ": " << r.status().message();
    // The decode phase with the most rows <= kReleaseMaxRows, and the one-row phase (the head's
    // vocabulary share is wide enough for the few-row body of kernels/gemv.cuh there; sparse_attention's
    // most split launch: kernels/sparse_attention.cuh).
    size_t best = SIZE_MAX, one = SIZE_MAX;
    for (size_t p = 0; p < (*r)->calls.phases.size(); ++p) {
      const Phase& phase = (*r)->calls.phases[p];
      if (phase.kind != PhaseKind::Decode || phase.rows > kReleaseMaxRows) continue;
      if (phase.rows == 1) one = p;
      if (best == SIZE_MAX || phase.rows > (*r)->calls.phases[best].rows) best = p;
    }
    ASSERT_NE(best, SIZE_MAX) << "release world 4 rank " << rank << ": no decode phase of at most " << kReleaseMaxRows
                              << " rows";
    for (const PhaseRefusal& refusal : (*r)->plan.refusals)
      EXPECT_NE(refusal.phase, best) << "the checked phase does not fit h200: " << refusal.message;
    collect(cases, *r, {best}, &kReleaseOps, better);
    if (one != SIZE_MAX) collect(cases, *r, {one}, &kReleaseOps, better);
  }
  report_without_kernel(without_kernel);
  const int quantized = quantized_keys(cases);
  std::printf("release: %zu distinct variants of the heavy ops, %d reading FP8/FP4 weights\n", cases.size(), quantized);
  const bool filtered = env_text("DSV41_GPU_FILTER") != nullptr;
  if (!filtered) {
    EXPECT_GE(static_cast<int>(cases.size()), kReleaseMinVariants);
    EXPECT_GE(quantized, kReleaseMinQuantized);
  }
  const int checked = check_cases(cases, s.target, s.device ? &*s.device : nullptr);
  if (!filtered) {
    EXPECT_GE(checked, kReleaseMinVariants) << "variants that did not compile or load were not checked";
  }
  counts().release += checked;
}

// The decode products split over K parts (kernels/gemv_kparts.cuh: grid z > 1, each block one K part, the
// column block's last block adding the parts in z order): the bench fixture at world 4 rank 0, bf16 and
// release packs, decode rows 1 and 8 (wq_a 1280x5120 in 3 parts, wkv 512x5120 in 8: 80 K blocks of 4
// chunks over 24 and 64 warp slices, so slices get unequal shares). One case per key, row count and part count.
TEST(GpuOps, DecodeProductsSplitOverKPartsMatchTheCpuOps) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  std::map<std::string, Case> cases;
  std::set<std::string> without_kernel;
  int ragged = 0;
  for (SynthFormat format : {SynthFormat::BF16, SynthFormat::Release}) {
    auto r = plan_bench(s, format == SynthFormat::BF16 ? "bench bf16" : "bench release-format", 4, 8, {1, 8}, format,
                        {16}, &without_kernel);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    for (size_t p = 0; p < (*r)->calls.phases.size(); ++p) {
      const Phase& phase = (*r)->calls.phases[p];
      if (phase.kind != PhaseKind::Decode) continue;
      for (size_t c = 0; c < phase.calls.size(); ++c) {
        const Call& call = phase.calls[c];
        if ((call.op != "linear" && call.op != "grouped_linear") || call.launch.variant < 0 || call.launch.grid[2] < 2)
          continue;
        const PlannedVariant& v = (*r)->plan.variants.at(call.launch.variant);
        if (!filter_takes(v.variant.key)) continue;
        const std::string map_key = fmt::format("{} rows {} parts {}", v.variant.key, phase.rows, call.launch.grid[2]);
        if (cases.count(map_key)) continue;
        // K blocks of 4 chunks (kernels/gemv_mma.cuh) over 8 warp slices a part: ragged when they do not divide.
        const int64_t n = call.op == "linear" ? call.constant("in_features") : call.constant("in_per_group");
        const int64_t elems = v.variant.key.find("format_w=bf16") != std::string::npos ? 8 : 16;
        ragged += (n / elems / 4) % (8 * call.launch.grid[2]) != 0;
        cases.emplace(map_key, Case{v.variant.key, *r, p, c, v,
                                      fmt::format("{}, {} K parts", where_of(**r, p, c), call.launch.grid[2])});
      }
    }
  }
  report_without_kernel(without_kernel);
  if (!env_text("DSV41_GPU_FILTER")) {  // both weight formats, both row counts, unequal slices
    for (const char* fmt_text : {"format_w=bf16", "format_w=fp8_tile32"})
      for (const char* rows : {" rows 1 ", " rows 8 "})
        EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const auto& kv) {
          return kv.first.find(fmt_text) != std::string::npos && kv.first.find(rows) != std::string::npos;
        })) << "no product split over K parts with " << fmt_text << " at" << rows;
    EXPECT_GT(ragged, 0) << "no case whose K blocks the warp slices share unequally";
  }
  const int checked = check_cases(cases, s.target, s.device ? &*s.device : nullptr);
  EXPECT_EQ(checked, static_cast<int>(cases.size()));
  std::printf("products split over K parts: %d cases (%d with unequal slices)\n", checked, ragged);
}

}  // namespace
}  // namespace dsv41::gpu_test
