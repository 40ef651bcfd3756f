// common/pack_index.cpp — safetensors header reading and validation, one shard at a time.
#include "common/pack_index.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "common/hashing.h"

namespace dsv41 {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// safetensors caps headers at 100 MB; a larger length is a corrupt or foreign file.
constexpr uint64_t kMaxHeaderLength = 100ull << 20;

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Result<std::vector<std::string>> shard_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::errorf("{}: not a folder", dir.string());
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".safetensors") names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) return Status::errorf("{}: no *.safetensors files", dir.string());
  return names;
}

Status read_header(const fs::path& file, std::string& header, uint64_t& header_length) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::errorf("{}: cannot open", file.string());
  std::error_code ec;
  const uint64_t size = fs::file_size(file, ec);
  unsigned char prefix[8];
  if (ec || size < 8 || !in.read(reinterpret_cast<char*>(prefix), 8))
    return Status::errorf("{}: file of {} bytes is too short for a safetensors header length (8 bytes)", file.string(),
                          ec ? 0 : size);
  header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | prefix[i];
  if (header_length > kMaxHeaderLength || header_length > size - 8)
    return Status::errorf("{}: header length {} exceeds the file ({} bytes after the length) or the limit {}",
                          file.string(), header_length, size - 8, kMaxHeaderLength);
  header.resize(header_length);
  if (!in.read(header.data(), static_cast<std::streamsize>(header_length)))
    return Status::errorf("{}: cannot read the {}-byte header", file.string(), header_length);
  return Status::ok();
}

Result<std::unordered_map<std::string, std::string>> read_weight_map(const fs::path& index_file) {
  std::ifstream in(index_file, std::ios::binary);
  if (!in) return Status::errorf("{}: cannot open", index_file.string());
  json root = json::parse(in, nullptr, false);
  if (root.is_discarded() || !root.is_object()) return Status::errorf("{}: not a JSON object", index_file.string());
  auto it = root.find("weight_map");
  if (it == root.end() || !it->is_object())
    return Status::errorf("{}: weight_map: missing, expected an object of tensor name -> shard file",
                          index_file.string());
  std::unordered_map<std::string, std::string> map;
  for (auto& [name, file] : it->items()) {
    if (!file.is_string())
      return Status::errorf("{}: weight_map.{}: value {}, expected a shard file name", index_file.string(), name,
                            file.dump());
    map.emplace(name, file.get<std::string>());
  }
  return map;
}

}  // namespace

int64_t TensorEntry::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Status parse_safetensors_header(const std::string& header_json, const std::string& shard_name, int shard,
                                std::vector<TensorEntry>& entries, uint64_t& data_bytes) {
  json root = json::parse(header_json, nullptr, false);
  if (root.is_discarded()) return Status::errorf("{}: header is not valid JSON", shard_name);
  if (!root.is_object()) return Status::errorf("{}: header is {}, expected a JSON object", shard_name, root.type_name());
  std::vector<TensorEntry> found;
  for (auto& [name, info] : root.items()) {
    if (name == "__metadata__") continue;
    const std::string where = fmt::format("{}: {}", shard_name, name);
    if (!info.is_object()) return Status::errorf("{}: entry is {}, expected an object", where, info.type_name());
    TensorEntry t;
    t.name = name;
    t.shard = shard;
    auto dtype = info.find("dtype");
    if (dtype == info.end() || !dtype->is_string())
      return Status::errorf("{}: dtype missing or not a string", where);
    auto parsed = dtype_from_name(dtype->get<std::string>());
    if (!parsed)
      return Status::errorf("{}: dtype \"{}\" is not supported (supported: {})", where, dtype->get<std::string>(),
                            dtype_names());
    t.dtype = *parsed;
    auto shape = info.find("shape");
    if (shape == info.end() || !shape->is_array()) return Status::errorf("{}: shape missing or not a list", where);
    for (const auto& d : *shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return Status::errorf("{}: shape {} has an entry that is not a non-negative integer", where, shape->dump());
      t.shape.push_back(d.get<int64_t>());
    }
    auto offsets = info.find("data_offsets");
    if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      return Status::errorf("{}: data_offsets must be two non-negative integers", where);
    t.data_begin = (*offsets)[0].get<uint64_t>();
    t.data_end = (*offsets)[1].get<uint64_t>();
    if (t.data_end < t.data_begin)
      return Status::errorf("{}: data_offsets [{}, {}] end before they begin", where, t.data_begin, t.data_end);
    // Multiplied with overflow checks: a hostile shape must not wrap to a small byte count.
    uint64_t expected = static_cast<uint64_t>(dtype_bytes(t.dtype));
    bool too_large = false;
    for (int64_t d : t.shape) too_large |= __builtin_mul_overflow(expected, static_cast<uint64_t>(d), &expected);
    if (too_large || expected > static_cast<uint64_t>(INT64_MAX))
      return Status::errorf("{}: shape {} of {} is too large (over 2^63 bytes)", where, shape_text(t.shape),
                            dtype_name(t.dtype));
    if (t.bytes() != expected)
      return Status::errorf("{}: data_offsets [{}, {}] hold {} bytes, expected {} for {} {}", where, t.data_begin,
                            t.data_end, t.bytes(), expected, dtype_name(t.dtype), shape_text(t.shape));
    found.push_back(std::move(t));
  }
  // The data section must be covered exactly: sorted, no gap and no overlap.
  std::sort(found.begin(), found.end(),
            [](const TensorEntry& a, const TensorEntry& b) { return a.data_begin < b.data_begin || (a.data_begin == b.data_begin && a.data_end < b.data_end); });
  uint64_t cursor = 0;
  for (const auto& t : found) {
    if (t.data_begin != cursor)
      return Status::errorf("{}: {}: data_offsets begin at {}, expected {} ({})", shard_name, t.name, t.data_begin,
                            cursor,
                            t.data_begin < cursor ? "overlapping the previous tensor" : "a gap after the previous tensor");
    cursor = t.data_end;
  }
  data_bytes = cursor;
  for (auto& t : found) entries.push_back(std::move(t));
  return Status::ok();
}

Result<PackIndex> PackIndex::open(const std::string& dir_text) {
  const fs::path dir = dir_text;
  PackIndex pack;
  pack.dir_ = dir_text;
  const fs::path index_file = dir / "model.safetensors.index.json";
  std::error_code ec;
  std::unordered_map<std::string, std::string> weight_map;
  std::vector<std::string> names;
  const bool indexed = fs::exists(index_file, ec);
  if (indexed) {
    DSV41_ASSIGN_OR_RETURN(weight_map, read_weight_map(index_file));
    for (const auto& [name, file] : weight_map) names.push_back(file);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    if (names.empty()) return Status::errorf("{}: weight_map is empty", index_file.string());
  } else {
    DSV41_ASSIGN_OR_RETURN(names, shard_names(dir));
  }
  for (size_t s = 0; s < names.size(); ++s) {
    ShardInfo shard;
    shard.file_name = names[s];
    std::string header;
    DSV41_TRY(read_header(dir / names[s], header, shard.header_length));
    shard.header_digest = hash_text(header);
    DSV41_TRY(parse_safetensors_header(header, names[s], static_cast<int>(s), pack.tensors_, shard.data_bytes));
    pack.shards_.push_back(shard);
  }
  for (size_t i = 0; i < pack.tensors_.size(); ++i) {
    const TensorEntry& t = pack.tensors_[i];
    auto [it, inserted] = pack.by_name_.emplace(t.name, i);
    if (!inserted)
      return Status::errorf("{}: {}: tensor name also appears in {}", pack.shards_[t.shard].file_name, t.name,
                            pack.shards_[pack.tensors_[it->second].shard].file_name);
  }
  if (indexed) {
    for (const auto& t : pack.tensors_) {
      auto it = weight_map.find(t.name);
      const std::string& shard = pack.shards_[t.shard].file_name;
      if (it == weight_map.end())
        return Status::errorf("{}: {}: tensor is not listed in model.safetensors.index.json", shard, t.name);
      if (it->second != shard)
        return Status::errorf("{}: {}: model.safetensors.index.json places it in {}", shard, t.name, it->second);
    }
    for (const auto& [name, file] : weight_map)
      if (!pack.by_name_.count(name))
        return Status::errorf("model.safetensors.index.json: {}: listed in {} but that shard's header lacks it", name,
                              file);
  }
  return pack;
}

const TensorEntry* PackIndex::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

uint64_t PackIndex::total_data_bytes() const {
  uint64_t total = 0;
  for (const auto& s : shards_) total += s.data_bytes;
  return total;
}

uint64_t PackIndex::digest() const {
  Hasher h;
  h.add(static_cast<uint64_t>(shards_.size()));
  for (const auto& s : shards_) h.add(s.file_name).add(s.header_length).add(s.data_bytes).add(s.header_digest);
  return h.digest();
}

Status PackIndex::check_data_present() const {
  for (const auto& s : shards_) {
    std::error_code ec;
    const uint64_t size = fs::file_size(fs::path(dir_) / s.file_name, ec);
    if (ec) return Status::errorf("{}: cannot read its size", s.file_name);
    if (size < s.expected_file_size())
      return Status::errorf("{}: file has {} bytes, its header describes {} (a header-only or truncated shard)",
                            s.file_name, size, s.expected_file_size());
  }
  return Status::ok();
}

}  // namespace dsv41
