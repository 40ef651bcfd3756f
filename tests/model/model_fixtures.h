// tests/model/model_fixtures.h — the end-to-end suite's tiny packs, planned worlds, cached generations and reference logits.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "compiler/plan/serving_settings.h"
#include "compiler/synth/synth_pack.h"
#include "runtime/generate.h"
#include "tests/model/model_compare.h"
#include "tests/reference/reference_model.h"

namespace dsv41::model_test {

namespace fs = std::filesystem;

// Check: programs planned with activations F32 and the reference with Rounding::None (docs/model.md
// §2, where 1e-3·max|logit| holds). BF16: the serving numerics on both sides. CheckOfficial and
// BF16Official: the same activations with the official cache format (--cache-format official: packed
// FP8/FP4 cache rows), which the reference does not model.
enum class Mode { Check, BF16, CheckOfficial, BF16Official };
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
// Short enough that every limit is first crossed while decoding (8 prompt + 31 fed positions).
constexpr PromptCase kShortPrompt{"short-8", 8, 801};

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

}  // namespace dsv41::model_test
