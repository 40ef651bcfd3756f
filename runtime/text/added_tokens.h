// runtime/text/added_tokens.h — tokenizer.json's added tokens, matched in the text before BPE.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace dsv41::text {

struct AddedToken {
  int32_t id;
  std::string content;
  bool normalized;  // matched in a second pass, after the normalized=false tokens
  bool special;
};

// A piece of the input: an added token's id, or text (id -1) for the pre-tokenizer and BPE.
struct TextSegment {
  std::string_view text;
  int32_t id;
};

class AddedTokens {
 public:
  // Refuses lstrip, rstrip or single_word set (DeepSeek's files set none), naming the token.
  static Result<AddedTokens> from_json(const nlohmann::json& added_tokens);
  // As HF tokenizers does: tokens with normalized=false split the text first, leftmost-longest; then
  // the normalized ones split the remaining text (the normalizer is empty, so text is unchanged).
  std::vector<TextSegment> split(std::string_view text) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find(std::string_view content) const;

 private:
  struct Group {
    std::unordered_map<uint8_t, std::vector<size_t>> by_first_byte;  // indices into tokens_, longest first
  };
  void split_group(const Group& group, std::string_view text, std::vector<TextSegment>& out) const;
  std::vector<AddedToken> tokens_;
  std::unordered_map<std::string, size_t> by_content_;
  Group raw_, normalized_;
};

}  // namespace dsv41::text
