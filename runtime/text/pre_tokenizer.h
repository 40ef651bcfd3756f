// runtime/text/pre_tokenizer.h — HF pre-tokenizer Sequence of Split regexes (PCRE2, UTF + UCP) and ByteLevel.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace dsv41::text {

class SplitRegex;  // one compiled Split pattern

// Splits text into the pieces BPE runs on. Only what DeepSeek's tokenizer.json uses is accepted:
// Split with a Regex pattern, behavior Isolated and invert false; ByteLevel with use_regex false
// (its byte→char mapping is done by the BPE step, which works on bytes).
class PreTokenizer {
 public:
  static Result<PreTokenizer> from_json(const nlohmann::json& spec);
  // Pieces as views into text, in order, covering it without gaps. text must be valid UTF-8.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  std::vector<std::shared_ptr<const SplitRegex>> splits_;
};

// Rewrites an Oniguruma pattern for PCRE2 where the two differ: \s and \S become Oniguruma's
// Unicode White_Space set (PCRE2's \s with UCP also takes U+180E and misses nothing else we need).
std::string onig_to_pcre2(std::string_view pattern);

}  // namespace dsv41::text
