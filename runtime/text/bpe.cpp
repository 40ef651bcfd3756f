// runtime/text/bpe.cpp — BPE merges with a priority queue over a linked list of symbols (O(n log n) per piece).
#include "runtime/text/bpe.h"

#include <queue>

#include "runtime/text/utf8.h"

namespace dsv41::text {

const std::array<std::string, 256>& byte_level_chars() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    uint32_t shifted = 256;  // bytes outside the printable ranges map to U+0100 onwards, in order
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      append_utf8(t[b], printable ? b : shifted++);
    }
    return t;
  }();
  return table;
}

std::string byte_level_decode(std::string_view spelling) {
  // The alphabet's characters are all below U+0144: a table by code point (-1: not in the alphabet).
  static const std::array<int16_t, 0x200> char_to_byte = [] {
    std::array<int16_t, 0x200> t;
    t.fill(-1);
    uint32_t shifted = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      t[printable ? b : shifted++] = static_cast<int16_t>(b);
    }
    return t;
  }();
  std::string out;
  out.reserve(spelling.size());
  size_t pos = 0;
  while (pos < spelling.size()) {
    const auto lead = static_cast<uint8_t>(spelling[pos]);
    uint32_t cp = 0x200;  // anything outside the table
    size_t n = 1;
    if (lead < 0x80) {
      cp = lead;
    } else if ((lead & 0xE0) == 0xC0 && pos + 1 < spelling.size()) {
      cp = ((lead & 0x1Fu) << 6) | (static_cast<uint8_t>(spelling[pos + 1]) & 0x3Fu);
      n = 2;
    }
    if (cp >= char_to_byte.size() || char_to_byte[cp] < 0) return std::string(spelling);
    out.push_back(static_cast<char>(char_to_byte[cp]));
    pos += n;
  }
  return out;
}

Result<BpeModel> BpeModel::from_json(const nlohmann::json& model) {
  const std::string type = model.value("type", "");
  if (type != "BPE") return Status::errorf("model.type {:?} is not supported (only BPE)", type);
  if (model.value("byte_fallback", false)) return Status::error("model.byte_fallback true is not supported");
  if (model.contains("dropout") && !model["dropout"].is_null()) {
    return Status::errorf("model.dropout {} is not supported (only null)", model["dropout"].dump());
  }
  for (const char* field : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(field) && !model[field].is_null() && !model[field].get<std::string>().empty()) {
      return Status::errorf("model.{} {} is not supported (only null)", field, model[field].dump());
    }
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return Status::error("model.vocab: missing or not an object");
  }
  BpeModel bpe;
  bpe.ignore_merges_ = model.value("ignore_merges", false);
  const auto& vocab = model["vocab"].get_ref<const nlohmann::json::object_t&>();
  bpe.vocab_.reserve(vocab.size());
  for (const auto& [spelling, id] : vocab) {
    if (!id.is_number_integer()) return Status::errorf("model.vocab {:?}: id {} is not an integer", spelling, id.dump());
    bpe.vocab_.emplace(spelling, id.get<int32_t>());
  }
  for (uint32_t b = 0; b < 256; ++b) {
    const auto it = bpe.vocab_.find(byte_level_chars()[b]);
    bpe.byte_ids_[b] = it == bpe.vocab_.end() ? -1 : it->second;
  }
  const auto& merges = model.at("merges");
  bpe.merges_.reserve(merges.size());
  int32_t rank = 0;
  std::string merged;  // reused: no allocation per merge
  for (const auto& merge : merges) {
    std::string_view left, right;
    if (merge.is_string()) {  // "left right" (tokenizers < 0.20) or ["left", "right"]
      const std::string_view s = merge.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string_view::npos || s.find(' ', space + 1) != std::string_view::npos) {
        return Status::errorf("model.merges[{}] {:?}: expected two tokens separated by one space", rank, s);
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      left = merge[0].get_ref<const std::string&>();
      right = merge[1].get_ref<const std::string&>();
    } else {
      return Status::errorf("model.merges[{}] {}: expected a string or a pair", rank, merge.dump());
    }
    merged.assign(left).append(right);
    const auto l = bpe.vocab_.find(left), r = bpe.vocab_.find(right), m = bpe.vocab_.find(std::string_view(merged));
    if (l == bpe.vocab_.end() || r == bpe.vocab_.end() || m == bpe.vocab_.end()) {
      return Status::errorf("model.merges[{}] {:?} + {:?}: a part or the merged token is not in model.vocab",
                            rank, left, right);
    }
    bpe.merges_.emplace(key(l->second, r->second), Merge{rank, m->second});
    ++rank;
  }
  return bpe;
}

void BpeModel::encode_piece(std::string_view bytes, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    std::string spelling;
    for (const char c : bytes) spelling += byte_level_chars()[static_cast<uint8_t>(c)];
    if (const auto it = vocab_.find(std::string_view(spelling)); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  struct Symbol {
    int32_t id;
    int32_t prev, next;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(bytes.size());
  for (const char c : bytes) {
    const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id < 0) continue;
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  struct Candidate {
    int32_t rank, pos, left, right;  // the pair it was made for, to detect stale entries
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t pos) {
    if (pos < 0) return;
    const int32_t next = symbols[pos].next;
    if (next < 0) return;
    const auto it = merges_.find(key(symbols[pos].id, symbols[next].id));
    if (it != merges_.end()) queue.push({it->second.rank, pos, symbols[pos].id, symbols[next].id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.id < 0 || left.next < 0) continue;  // merged away, or now last
    Symbol& right = symbols[left.next];
    if (left.id != top.left || right.id != top.right) continue;  // the pair changed since
    left.id = merges_.at(key(top.left, top.right)).id;
    right.id = -1;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out.push_back(symbols[i].id);
}

}  // namespace dsv41::text
