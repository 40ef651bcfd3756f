// runtime/text/tokenizer.cpp — loads tokenizer.json and runs added tokens → pre-tokenizer → BPE; decodes.
#include "runtime/text/tokenizer.h"

#include <fstream>
#include <sstream>

#include "runtime/text/added_tokens.h"
#include "runtime/text/bpe.h"
#include "runtime/text/pre_tokenizer.h"
#include "runtime/text/utf8.h"

namespace dsv41::text {

struct TokenizerData {
  BpeModel bpe;
  AddedTokens added;
  PreTokenizer pre_tokenizer;
  std::vector<std::string> id_bytes;      // id → the bytes it decodes to
  std::vector<bool> id_known;             // ids with no token are skipped by decode
};

namespace {

Status check_supported(const nlohmann::json& j) {
  if (j.contains("normalizer") && !j["normalizer"].is_null()) {
    const auto& n = j["normalizer"];
    const bool empty_sequence = n.value("type", "") == "Sequence" && n.contains("normalizers") &&
                                n["normalizers"].is_array() && n["normalizers"].empty();
    if (!empty_sequence) return Status::errorf("normalizer {} is not supported (only null or an empty Sequence)", n.dump());
  }
  if (j.contains("decoder") && !j["decoder"].is_null()) {
    const std::string type = j["decoder"].value("type", "");
    if (type != "ByteLevel") return Status::errorf("decoder.type {:?} is not supported (only ByteLevel)", type);
  }
  if (!j.contains("model")) return Status::error("model: missing");
  return Status::ok();
}

}  // namespace

Result<Tokenizer> Tokenizer::load_from_string(const std::string& json_text, const std::string& name) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::errorf("{}: not a JSON object", name);
  auto data = std::make_shared<TokenizerData>();
  auto build = [&]() -> Status {
    DSV41_TRY(check_supported(j));
    DSV41_ASSIGN_OR_RETURN(data->bpe, BpeModel::from_json(j["model"]));
    DSV41_ASSIGN_OR_RETURN(data->added, AddedTokens::from_json(j.value("added_tokens", nlohmann::json())));
    DSV41_ASSIGN_OR_RETURN(data->pre_tokenizer, PreTokenizer::from_json(j.value("pre_tokenizer", nlohmann::json())));
    return Status::ok();
  };
  try {
    DSV41_TRY(build().with_context(name));
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong JSON type
    return Status::errorf("{}: malformed tokenizer.json: {}", name, e.what());
  }
  int32_t highest = -1;
  for (const auto& [spelling, id] : data->bpe.vocab()) {
    if (id < 0) return Status::errorf("{}: model.vocab {:?} has negative id {}", name, spelling, id);
    highest = std::max(highest, id);
  }
  for (const auto& token : data->added.tokens()) highest = std::max(highest, token.id);
  data->id_bytes.resize(highest + 1);
  data->id_known.assign(highest + 1, false);
  for (const auto& [spelling, id] : data->bpe.vocab()) {
    data->id_bytes[id] = byte_level_decode(spelling);
    data->id_known[id] = true;
  }
  for (const auto& token : data->added.tokens()) {  // an added token's content wins over a vocab entry
    if (token.id < 0) return Status::errorf("{}: added token {:?} has negative id {}", name, token.content, token.id);
    data->id_bytes[token.id] = byte_level_decode(token.content);
    data->id_known[token.id] = true;
  }
  Tokenizer tokenizer;
  tokenizer.data_ = std::move(data);
  return tokenizer;
}

Result<Tokenizer> Tokenizer::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::errorf("{}: cannot open the tokenizer file", path);
  std::ostringstream text;
  text << in.rdbuf();
  return load_from_string(text.str(), path);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  // PCRE2 matches valid UTF-8 only; a client's bytes get U+FFFD where they are not (as a JSON or
  // JavaScript string conversion would do before HF tokenizers ever sees them).
  const std::string valid = utf8_lossy(text);
  text = valid;
  std::vector<int32_t> ids;
  for (const auto& segment : data_->added.split(text)) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    for (const auto piece : data_->pre_tokenizer.split(segment.text)) data_->bpe.encode_piece(piece, ids);
  }
  return ids;
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= static_cast<int32_t>(data_->id_bytes.size())) return {};
  return data_->id_bytes[id];
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string bytes;
  for (const int32_t id : ids) {
    if (id >= 0 && id < static_cast<int32_t>(data_->id_known.size()) && data_->id_known[id]) {
      bytes += data_->id_bytes[id];
    }
  }
  return utf8_lossy(bytes);
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  if (const AddedToken* added = data_->added.find(token)) return added->id;
  const auto& vocab = data_->bpe.vocab();
  if (const auto it = vocab.find(token); it != vocab.end()) return it->second;
  return std::nullopt;
}

int64_t Tokenizer::vocab_size() const { return static_cast<int64_t>(data_->id_bytes.size()); }

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}

std::string StreamDecoder::push(int32_t id) {
  pending_ += tokenizer_->token_bytes(id);
  const size_t ready = utf8_decodable_prefix(pending_);
  std::string out = utf8_lossy(std::string_view(pending_).substr(0, ready));
  pending_.erase(0, ready);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out = utf8_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace dsv41::text
