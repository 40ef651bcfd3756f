// compiler/plan/serving_settings.h — what a deployment serves (context, slots, row counts, activations),
// its model-dependent defaults and the bounds every setting must meet.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/cache_format.h"
#include "common/dtype.h"
#include "common/model_config.h"
#include "common/status.h"

namespace dsv41 {

// The context used when none is asked for, unless the model's max_position_embeddings is smaller.
constexpr int64_t kDefaultContext = 65536;

struct ServingSettings {
  int64_t context = 0;                         // tokens a slot can hold; 0: default_context(config)
  int slots = 8;                               // sequences served at once
  std::vector<int64_t> prefill_rows = {2048};  // prefill segment sizes; the first is the default
  std::vector<int64_t> decode_rows = {1, 2, 4, 8, 16};
  // BF16: activations and caches are rounded where docs/model.md §2 says. F32: nothing is rounded,
  // the "check mode" in which two implementations agree to fp32 accuracy.
  DType activations = DType::BF16;
  // Tokens a DSpark round drafts per slot (0: drafting off). A round verifies them in one decode
  // window of draft_tokens + 1 rows a slot, so rings are planned draft_tokens rows longer to survive
  // the rewind of rejected rows (docs/serving.md "Drafting").
  int64_t draft_tokens = 0;
  // How the caches store their rows: BF16 as activations, or Official (each cache packed as the
  // official code rounds it: FP8 window rows, FP4 compressed rows and index keys; docs/model.md
  // "Cache formats"). The state per slot shrinks to about 28% at long context.
  CacheFormat cache_format = CacheFormat::BF16;
};

// The smaller of kDefaultContext and the model's max_position_embeddings (when it states one).
int64_t default_context(const ModelConfig& config);

// Messages name the setting as "setting NAME = VALUE" (NAME as in ServingSettings), so a front end
// can name its own spelling of it (dsv41c maps them to its flags).
// Refuses settings that cannot be served (context, slots, row counts).
Status check_settings(const ModelConfig& config, const ServingSettings& settings);
// The settings with defaults filled in (context 0 → default_context), then checked.
Result<ServingSettings> resolve_settings(const ModelConfig& config, const ServingSettings& settings);

}  // namespace dsv41
