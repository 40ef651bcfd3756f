// runtime/text/pre_tokenizer.cpp — Split pre-tokenizers with PCRE2 (each pattern compiled once, at load).
#include "runtime/text/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace dsv41::text {

class SplitRegex {
 public:
  SplitRegex(pcre2_code* code) : code_(code) {}
  ~SplitRegex() { pcre2_code_free(code_); }
  SplitRegex(const SplitRegex&) = delete;
  SplitRegex& operator=(const SplitRegex&) = delete;

  // Isolated: every match is a piece and so is every non-empty gap between matches.
  void split(std::string_view text, std::vector<std::string_view>& out) const {
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(code_, nullptr);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t start = 0;  // where the unmatched gap begins
    size_t offset = 0;
    while (offset < text.size()) {
      const int rc = pcre2_match(code_, subject, text.size(), offset, PCRE2_NO_UTF_CHECK, match, nullptr);
      // No further match. The text was repaired to valid UTF-8, and these patterns backtrack at most
      // over one run of spaces, far below PCRE2's match limit: no other error is expected here.
      if (rc < 0) break;
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
      const size_t m0 = ovector[0], m1 = ovector[1];
      if (m1 == m0) {  // an empty match yields no piece; step over one character
        offset = m0 + 1;
        while (offset < text.size() && (static_cast<uint8_t>(text[offset]) & 0xC0) == 0x80) ++offset;
        continue;
      }
      if (m0 > start) out.push_back(text.substr(start, m0 - start));
      out.push_back(text.substr(m0, m1 - m0));
      start = offset = m1;
    }
    if (start < text.size()) out.push_back(text.substr(start));
    pcre2_match_data_free(match);
  }

 private:
  pcre2_code* code_;
};

namespace {

// Oniguruma's \s (Unicode White_Space), spelled out so PCRE2 matches exactly the same characters.
constexpr std::string_view kSpaceClass =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

Result<std::shared_ptr<const SplitRegex>> compile(const std::string& onig_pattern) {
  const std::string pattern = onig_to_pcre2(onig_pattern);
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return Status::errorf("pre_tokenizer Split regex {:?}: PCRE2 refuses it at offset {}: {}", onig_pattern,
                          error_offset, reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // best effort: without JIT the interpreter runs
  return std::shared_ptr<const SplitRegex>(std::make_shared<SplitRegex>(code));
}

Status add_step(const nlohmann::json& step, std::vector<std::shared_ptr<const SplitRegex>>& splits) {
  const std::string type = step.value("type", "");
  if (type == "ByteLevel") {
    if (step.value("use_regex", true)) {
      return Status::error("pre_tokenizer ByteLevel: use_regex true is not supported (only false)");
    }
    if (step.value("add_prefix_space", false)) {
      return Status::error("pre_tokenizer ByteLevel: add_prefix_space true is not supported (only false)");
    }
    return Status::ok();
  }
  if (type != "Split") {
    return Status::errorf("pre_tokenizer type {:?} is not supported (Sequence, Split, ByteLevel)", type);
  }
  const std::string behavior = step.value("behavior", "");
  if (behavior != "Isolated") {
    return Status::errorf("pre_tokenizer Split behavior {:?} is not supported (only Isolated)", behavior);
  }
  if (step.value("invert", false)) return Status::error("pre_tokenizer Split invert true is not supported");
  if (!step.contains("pattern") || !step["pattern"].contains("Regex")) {
    return Status::error("pre_tokenizer Split pattern: only {\"Regex\": ...} is supported");
  }
  DSV41_ASSIGN_OR_RETURN(auto regex, compile(step["pattern"]["Regex"].get<std::string>()));
  splits.push_back(std::move(regex));
  return Status::ok();
}

}  // namespace

std::string onig_to_pcre2(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 's') {
        out += in_class ? std::string(kSpaceClass) : "[" + std::string(kSpaceClass) + "]";
      } else if (next == 'S' && !in_class) {
        out += "[^" + std::string(kSpaceClass) + "]";
      } else {
        out += c;
        out += next;  // other escapes (\S inside a class does not occur in DeepSeek's patterns) as they are
      }
      continue;
    }
    if (c == '[' && !in_class) in_class = true;
    else if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

Result<PreTokenizer> PreTokenizer::from_json(const nlohmann::json& spec) {
  PreTokenizer result;
  if (spec.is_null()) return result;
  const std::string type = spec.value("type", "");
  if (type == "Sequence") {
    for (const auto& step : spec.at("pretokenizers")) DSV41_TRY(add_step(step, result.splits_));
  } else {
    DSV41_TRY(add_step(spec, result.splits_));
  }
  return result;
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces{text};
  if (text.empty()) return {};
  std::vector<std::string_view> next;
  for (const auto& regex : splits_) {  // each Split sees only the pieces the previous one left
    next.clear();
    for (const auto piece : pieces) regex->split(piece, next);
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace dsv41::text
