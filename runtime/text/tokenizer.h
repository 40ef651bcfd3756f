// runtime/text/tokenizer.h — HF tokenizer.json byte-level BPE (DeepSeek-V4.1): encode, decode, stream decode.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dsv41::text {

struct TokenizerData;  // vocabulary, merges, added tokens, compiled pre-tokenizer regexes

// Immutable once loaded; encode/decode are const and safe to call from several threads.
class Tokenizer {
 public:
  // Reads a tokenizer.json. Refuses what it does not implement (another model type, byte_fallback,
  // a non-empty normalizer, an unknown pre-tokenizer or decoder), naming the field and its value.
  static Result<Tokenizer> load(const std::string& path);
  static Result<Tokenizer> load_from_string(const std::string& json_text, const std::string& name);

  // As HF tokenizers' encode(text, add_special_tokens=false): added tokens split the text first,
  // then the pre-tokenizer's Split regexes, then BPE by merge rank per piece.
  std::vector<int32_t> encode(std::string_view text) const;
  // ByteLevel decoder: the tokens' bytes joined, then a lossy UTF-8 decode (U+FFFD per bad sequence).
  // Ids outside the vocabulary are skipped.
  std::string decode(const std::vector<int32_t>& ids) const;
  // The raw bytes a token stands for (an added token: its content); empty for an unknown id.
  std::string token_bytes(int32_t id) const;
  // The id of an exact vocabulary token (in its byte-level spelling) or added token.
  std::optional<int32_t> token_id(std::string_view token) const;
  int64_t vocab_size() const;  // highest id + 1

 private:
  std::shared_ptr<const TokenizerData> data_;
};

// Text for ids as they arrive, holding back an incomplete UTF-8 sequence until its bytes come, so the
// concatenation of every push() and finish() equals decode() of all ids.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer);
  std::string push(int32_t id);
  std::string finish();  // what is held back, decoded lossily

 private:
  const Tokenizer* tokenizer_;
  std::string pending_;  // bytes of an incomplete UTF-8 sequence at the end
};

// Lossy UTF-8 decoding as Rust's String::from_utf8_lossy (each maximal invalid subpart → U+FFFD).
std::string utf8_lossy(std::string_view bytes);

}  // namespace dsv41::text
