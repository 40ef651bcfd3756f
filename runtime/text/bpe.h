// runtime/text/bpe.h — byte-level BPE: the byte→char alphabet, merges by rank, one piece at a time.
#pragma once

#include <array>
#include <functional>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace dsv41::text {

// GPT-2's reversible byte → printable character map that byte-level vocabularies are spelled in.
const std::array<std::string, 256>& byte_level_chars();
// The bytes a byte-level spelling stands for, as HF's ByteLevel decoder does: if every character is
// in the alphabet, its byte; otherwise the spelling's own UTF-8 bytes.
std::string byte_level_decode(std::string_view spelling);

class BpeModel {
 public:
  // model: tokenizer.json's "model" object. Refuses another type, byte_fallback, dropout, affixes.
  static Result<BpeModel> from_json(const nlohmann::json& model);
  // Appends the ids of one pre-tokenized piece (raw bytes), merging the lowest-ranked pair first
  // (leftmost among equals). A byte with no token is dropped (unk_token is null).
  void encode_piece(std::string_view bytes, std::vector<int32_t>& out) const;

  // Byte-level spelling → id; looked up by string_view too (no temporary strings at load).
  struct SpellingHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Vocab = std::unordered_map<std::string, int32_t, SpellingHash, std::equal_to<>>;
  const Vocab& vocab() const { return vocab_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t id;  // the merged token
  };
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  Vocab vocab_;
  std::array<int32_t, 256> byte_ids_{};             // -1 where a byte has no token
  std::unordered_map<uint64_t, Merge> merges_;
  bool ignore_merges_ = false;
};

}  // namespace dsv41::text
