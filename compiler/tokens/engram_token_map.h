// compiler/tokens/engram_token_map.h — Engram's token map: every token id to a compressed id of its normalised text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "common/status.h"
#include "runtime/text/tokenizer.h"

namespace dsv41 {

struct EngramTokenMap {
  std::vector<int32_t> compressed;  // [vocab] token id → compressed id, numbered by first appearance
  int64_t count = 0;                // distinct compressed ids
};

// The key a token is grouped by (docs/model.md "Engram"): the token decoded alone; when that text holds
// U+FFFD (a partial UTF-8 sequence), the token's raw byte-level spelling; otherwise NFKC → NFD →
// accents (Mn) stripped → lowercase → runs of [ \t\r\n] to one space → strip, where a lone " " is
// kept; an empty result falls back to the decoded text.
std::string engram_token_key(const text::Tokenizer& tokenizer, int32_t id);

// The normalisation step alone, on UTF-8 text (exposed for tests).
std::string engram_normalize(const std::string& utf8);

// The map over ids 0..vocab−1 (ids the tokenizer lacks decode to "" and share that key). Refuses a
// count other than `expected` (engram_compressed_vocab_size), naming both and the tokenizer source;
// `expected` < 0 skips the check.
Result<EngramTokenMap> build_engram_token_map(const text::Tokenizer& tokenizer, int64_t vocab, int64_t expected,
                                              const std::string& source);

// The model's token map for a config with Engram layers, from MODEL_DIR/tokenizer.json, checked against
// engram_compressed_vocab_size; nullopt for a config without Engram or a folder without tokenizer.json
// (a header-only pack), in which case `warnings` says the map was not checked. A count other than
// engram_compressed_vocab_size is refused naming both, unless `accept_count_mismatch` (then a warning).
Result<std::optional<EngramTokenMap>> model_engram_token_map(const ModelConfig& config, const std::string& model_dir,
                                                             std::vector<std::string>* warnings,
                                                             bool accept_count_mismatch = false);

}  // namespace dsv41
