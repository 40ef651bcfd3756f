// tests/model/model_fixtures.h — the end-to-end suite's tiny packs, planned worlds, cached generations and reference logits.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "compiler/memory_ledger.h"
#include "compiler/synth_pack.h"
#include "runtime/generate.h"
#include "tests/reference/reference_model.h"

namespace dsv41::model_test {

namespace fs = std::filesystem;
using Logits = std::vector<std::vector<float>>;

// Check: programs planned with activations F32 and the reference with Rounding::None (docs/model.md
// §2, where 1e-3·max|logit| holds). BF16: the serving numerics on both sides.
enum class Mode { Check, BF16 };
const char* mode_name(Mode mode);
const char* format_name(SynthFormat format);

constexpr uint64_t kPackSeed = 4141;  // write_synth_pack seed of both tiny packs
constexpr int kMaxTokens = 32;        // tokens generated per run (the last prompt row + 31 decode steps)
constexpr double kCheckTolerance = 1e-3;  // of max|logit| of the row, check mode only

// A prompt: `length` pseudo-random ids in [3, vocab) drawn from `seed` (mt19937).
struct PromptCase {
  const char* name;
  size_t length;
  uint32_t seed;
};
constexpr PromptCase kLongPrompt{"long-64", 64, 6401};
// Short enough that every limit is first crossed while decoding (12 + 31 fed positions).
constexpr PromptCase kShortPrompt{"short-12", 12, 1201};

std::vector<int32_t> prompt_ids(const PromptCase& prompt, int64_t vocab);

// The dsv41-tiny fixture's config, and a model folder with data for it (written once per process).
const ModelConfig& tiny_config();
const fs::path& tiny_pack(SynthFormat format);
// The reference over that folder's weights; null (after reporting why) when it cannot load.
const reference::ReferenceModel* reference_model(SynthFormat format);

// Context 256, 1 slot, prefill segments 2048 (the default), 64 and 16, the default decode rows.
ServingSettings tiny_settings(Mode mode);
// Every rank of `world` planned once per process (target none) as DIR/rank{N}.fb.
const fs::path& world_programs(SynthFormat format, Mode mode, int world);

// generate() once per process and key, all_logits on, kMaxTokens, stop_at_eos off. segment_rows 0
// is the default segment (2048), 1 token by token. A failure is reported and yields an empty result.
struct RunKey {
  SynthFormat format;
  Mode mode;
  int world;
  PromptCase prompt;
  int64_t segment_rows = 0;
};
std::string describe(const RunKey& key);
const GenerateResult& generated(const RunKey& key);

// The reference's logits for the prompt followed by the run's generated tokens (all but the last,
// which no row consumed): row i predicts the token at position i + 1, like GenerateResult::logits.
const Logits& reference_logits(const RunKey& key);

// Where two logit rows differ most, relative to max|logit| of the expected row.
struct RowDiff {
  double relative = 0;  // max|a − b| / max|b|
  int64_t index = -1;   // the vocabulary id of the largest |a − b|
  float actual = 0, expected = 0;
  float scale = 0;      // max|b|
};
RowDiff row_diff(const std::vector<float>& actual, const std::vector<float>& expected);

// Over rows [first, last): the worst row and its diff.
struct LogitsDiff {
  RowDiff worst;
  size_t row = 0;
};
LogitsDiff logits_diff(const Logits& actual, const Logits& expected, size_t first, size_t last);

// Expects every row of [first, last) within `tolerance`·max|logit|; a failure names the row, its
// position (row i is position i), the worst id and both values. Returns the worst relative diff.
double expect_rows_close(const Logits& actual, const Logits& expected, size_t first, size_t last, double tolerance,
                         const std::string& what);

// The fraction of rows in [first, last) whose greedy token is the same.
double top1_agreement(const Logits& a, const Logits& b, size_t first, size_t last);

// Which limits of docs/model.md §6 some position of a sequence of `length` positions crosses,
// computed from the config: the window ring wraps; an index source of ratio 2 / ratio 1 sees more
// compressed entries than index_topk; the candidate source publishes fewer blocks than are visible
// (so its mask can remove entries from a masked index source).
struct Crossings {
  bool window_wraps = false, topk_ratio2 = false, topk_ratio1 = false, candidate_mask = false;
  bool all() const { return window_wraps && topk_ratio2 && topk_ratio1 && candidate_mask; }
  bool any() const { return window_wraps || topk_ratio2 || topk_ratio1 || candidate_mask; }
};
Crossings crossings(const ModelConfig& config, int64_t length);
std::string describe(const Crossings& c);

}  // namespace dsv41::model_test
