// runtime/text/added_tokens.cpp — leftmost-longest matching of added tokens, in HF's two passes.
#include "runtime/text/added_tokens.h"

#include <algorithm>

namespace dsv41::text {

Result<AddedTokens> AddedTokens::from_json(const nlohmann::json& added_tokens) {
  AddedTokens result;
  if (added_tokens.is_null()) return result;
  for (const auto& t : added_tokens) {
    AddedToken token{t.at("id").get<int32_t>(), t.at("content").get<std::string>(), t.value("normalized", true),
                     t.value("special", false)};
    for (const char* flag : {"lstrip", "rstrip", "single_word"}) {
      if (t.value(flag, false)) {
        return Status::errorf("added_tokens {:?} (id {}): {} true is not supported", token.content, token.id, flag);
      }
    }
    if (token.content.empty()) return Status::errorf("added_tokens id {}: empty content", token.id);
    result.by_content_[token.content] = result.tokens_.size();
    result.tokens_.push_back(std::move(token));
  }
  for (size_t i = 0; i < result.tokens_.size(); ++i) {
    const AddedToken& token = result.tokens_[i];
    Group& group = token.normalized ? result.normalized_ : result.raw_;
    group.by_first_byte[static_cast<uint8_t>(token.content[0])].push_back(i);
  }
  for (Group* group : {&result.raw_, &result.normalized_}) {
    for (auto& [byte, list] : group->by_first_byte) {
      std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
        return result.tokens_[a].content.size() > result.tokens_[b].content.size();
      });
    }
  }
  return result;
}

const AddedToken* AddedTokens::find(std::string_view content) const {
  const auto it = by_content_.find(std::string(content));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

void AddedTokens::split_group(const Group& group, std::string_view text, std::vector<TextSegment>& out) const {
  size_t start = 0;
  for (size_t pos = 0; pos < text.size();) {
    const auto it = group.by_first_byte.find(static_cast<uint8_t>(text[pos]));
    const AddedToken* hit = nullptr;
    if (it != group.by_first_byte.end()) {
      for (const size_t index : it->second) {  // longest first, so the first hit is the longest
        const AddedToken* token = &tokens_[index];
        if (text.compare(pos, token->content.size(), token->content) == 0) {
          hit = token;
          break;
        }
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    if (pos > start) out.push_back({text.substr(start, pos - start), -1});
    out.push_back({text.substr(pos, hit->content.size()), hit->id});
    pos += hit->content.size();
    start = pos;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
}

std::vector<TextSegment> AddedTokens::split(std::string_view text) const {
  std::vector<TextSegment> first, result;
  split_group(raw_, text, first);
  for (const auto& segment : first) {
    if (segment.id >= 0) result.push_back(segment);
    else split_group(normalized_, segment.text, result);
  }
  return result;
}

}  // namespace dsv41::text
