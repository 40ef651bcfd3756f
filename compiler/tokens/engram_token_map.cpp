// compiler/tokens/engram_token_map.cpp — the token map's Unicode normalisation (ICU) and first-appearance numbering.
#include "compiler/tokens/engram_token_map.h"

#include <filesystem>
#include <unordered_map>

#include <fmt/format.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>

namespace dsv41 {
namespace {

constexpr UChar32 kSentinel = 0xE000;  // a private-use code point stands in for a lone " " across strip

// GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the other bytes for
// U+0100 onwards in byte order. This is how tokenizer.json spells vocabulary tokens.
std::string byte_level_spelling(const std::string& bytes) {
  auto printable = [](int b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  UChar32 map[256];
  int next = 0;
  for (int b = 0; b < 256; ++b) map[b] = printable(b) ? b : 0x100 + next++;
  icu::UnicodeString s;
  for (unsigned char b : bytes) s.append(map[b]);
  std::string out;
  s.toUTF8String(out);
  return out;
}

// Lowercase one code point at a time (full mappings, no context such as final sigma), as Rust's
// char::to_lowercase that HF's Lowercase normalizer applies per character.
icu::UnicodeString lowercase_each(const icu::UnicodeString& in) {
  icu::UnicodeString out;
  for (int32_t i = 0; i < in.length();) {
    const UChar32 c = in.char32At(i);
    icu::UnicodeString one(c);
    one.toLower(icu::Locale::getRoot());
    out.append(one);
    i += U16_LENGTH(c);
  }
  return out;
}

bool ascii_space(UChar32 c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

std::string engram_normalize(const std::string& utf8) {
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* nfkc = icu::Normalizer2::getNFKCInstance(err);
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(err);
  DSV41_CHECK(U_SUCCESS(err));
  icu::UnicodeString s = nfkc->normalize(icu::UnicodeString::fromUTF8(utf8), err);
  s = nfd->normalize(s, err);
  DSV41_CHECK(U_SUCCESS(err));
  icu::UnicodeString stripped;
  for (int32_t i = 0; i < s.length();) {
    const UChar32 c = s.char32At(i);
    if (u_charType(c) != U_NON_SPACING_MARK) stripped.append(c);
    i += U16_LENGTH(c);
  }
  const icu::UnicodeString lower = lowercase_each(stripped);
  icu::UnicodeString collapsed;
  bool in_run = false;
  for (int32_t i = 0; i < lower.length();) {
    const UChar32 c = lower.char32At(i);
    if (!ascii_space(c))
      collapsed.append(c);
    else if (!in_run)
      collapsed.append(static_cast<UChar32>(' '));
    in_run = ascii_space(c);
    i += U16_LENGTH(c);
  }
  if (collapsed == icu::UnicodeString(" ")) collapsed = icu::UnicodeString(kSentinel);
  // Strip White_Space at both ends (Rust's char::is_whitespace), then restore the protected space.
  int32_t begin = 0, end = collapsed.length();
  while (begin < end && u_isUWhiteSpace(collapsed.char32At(begin))) begin += U16_LENGTH(collapsed.char32At(begin));
  while (end > begin) {
    const int32_t last = collapsed.moveIndex32(end, -1);
    if (!u_isUWhiteSpace(collapsed.char32At(last))) break;
    end = last;
  }
  icu::UnicodeString result = collapsed.tempSubStringBetween(begin, end);
  result.findAndReplace(icu::UnicodeString(kSentinel), icu::UnicodeString(" "));
  std::string out;
  result.toUTF8String(out);
  return out;
}

std::string engram_token_key(const text::Tokenizer& tokenizer, int32_t id) {
  const std::string text = tokenizer.decode({id});
  if (text.find("\xEF\xBF\xBD") != std::string::npos) return byte_level_spelling(tokenizer.token_bytes(id));
  std::string norm = engram_normalize(text);
  return norm.empty() ? text : norm;
}

Status count_mismatch(const EngramTokenMap& map, int64_t vocab, int64_t expected, const std::string& source) {
  return Status::errorf(
      "{}: the Engram token map of ids 0..{} has {} compressed ids, but config "
      "engram_compressed_vocab_size is {}",
      source, vocab - 1, map.count, expected);
}

Result<EngramTokenMap> build_engram_token_map(const text::Tokenizer& tokenizer, int64_t vocab, int64_t expected,
                                              const std::string& source) {
  EngramTokenMap map;
  map.compressed.resize(static_cast<size_t>(vocab));
  std::unordered_map<std::string, int32_t> ids;
  for (int64_t id = 0; id < vocab; ++id) {
    auto [it, fresh] =
        ids.try_emplace(engram_token_key(tokenizer, static_cast<int32_t>(id)), static_cast<int32_t>(ids.size()));
    map.compressed[id] = it->second;
  }
  map.count = static_cast<int64_t>(ids.size());
  if (expected >= 0 && map.count != expected) return count_mismatch(map, vocab, expected, source);
  return map;
}

Result<std::optional<EngramTokenMap>> model_engram_token_map(const ModelConfig& config, const std::string& model_dir,
                                                             std::vector<std::string>* warnings,
                                                             bool accept_count_mismatch) {
  if (!config.has_engram()) return std::optional<EngramTokenMap>();
  const std::string path = (std::filesystem::path(model_dir) / "tokenizer.json").string();
  if (!std::filesystem::exists(path)) {
    warnings->push_back(
        fmt::format("{}: absent, so the Engram token map is not built or checked against "
                    "engram_compressed_vocab_size {}",
                    path, config.engram_compressed_vocab_size));
    return std::optional<EngramTokenMap>();
  }
  DSV41_ASSIGN_OR_RETURN(text::Tokenizer tokenizer, text::Tokenizer::load(path));
  DSV41_ASSIGN_OR_RETURN(EngramTokenMap map, build_engram_token_map(tokenizer, config.vocab_size, -1, path));
  if (map.count != config.engram_compressed_vocab_size) {
    const Status mismatch = count_mismatch(map, config.vocab_size, config.engram_compressed_vocab_size, path);
    if (!accept_count_mismatch) return mismatch;
    // Planned on request, never silently: compressed ids past the trained count hash to rows the
    // trained model never saw, so the logits of such tokens' n-grams are not the release's.
    warnings->push_back(mismatch.message() + " (accepted by request: the map is used as built, not forced to the "
                        "config's count; Engram rows of n-grams with the extra ids differ from the trained model's)");
  }
  return std::optional<EngramTokenMap>(std::move(map));
}

}  // namespace dsv41
