// tests/support/pack_editor.cpp — reads, edits and rewrites the files of a pack folder for the malformed-input tests.
#include "tests/support/pack_editor.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace dsv41::test {

uint64_t dtype_name_bytes(const std::string& dtype) {
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "BF16" || dtype == "F16" || dtype == "I16") return 2;
  if (dtype == "I64") return 8;
  return 1;
}

PackEditor::PackEditor(fs::path dir) : dir_(std::move(dir)) {
  for (const auto& item : fs::directory_iterator(dir_))
    if (item.path().extension() == ".safetensors")
      shards_[item.path().filename().string()] = read_safetensors(item.path());
  if (shards_.empty()) ADD_FAILURE() << dir_ << ": no shards to edit";
  const fs::path index = dir_ / "model.safetensors.index.json";
  if (fs::exists(index)) index_ = ordered_json::parse(read_file(index));
  config_ = ordered_json::parse(read_file(dir_ / "config.json"));
}

std::vector<std::string> PackEditor::shard_files() const {
  std::vector<std::string> names;
  for (const auto& [name, file] : shards_) names.push_back(name);
  return names;
}

std::string PackEditor::shard_of(const std::string& tensor) const {
  for (const auto& [name, file] : shards_)
    if (file.header.contains(tensor)) return name;
  return "";
}

ordered_json& PackEditor::text_config() {
  auto nested = config_.find("text_config");
  return nested != config_.end() && nested->is_object() ? *nested : config_;
}

void PackEditor::relayout(const std::string& shard) {
  ordered_json& header = this->header(shard);
  std::vector<std::pair<uint64_t, std::string>> order;
  for (auto& [name, entry] : header.items())
    if (name != "__metadata__") order.emplace_back(entry["data_offsets"][0].get<uint64_t>(), name);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  uint64_t cursor = 0;
  for (const auto& [begin, name] : order) {
    ordered_json& entry = header[name];
    uint64_t bytes = dtype_name_bytes(entry["dtype"].get<std::string>());
    for (const auto& d : entry["shape"]) bytes *= d.get<uint64_t>();
    entry["data_offsets"] = ordered_json::array({cursor, cursor + bytes});
    cursor += bytes;
  }
}

void PackEditor::remove_tensor(const std::string& name) {
  const std::string shard = shard_of(name);
  ASSERT_FALSE(shard.empty()) << name << " is in no shard of " << dir_;
  header(shard).erase(name);
  relayout(shard);
  if (indexed()) weight_map().erase(name);
}

void PackEditor::add_tensor(const std::string& shard, const std::string& name, const std::string& dtype,
                            const std::vector<int64_t>& shape, bool index) {
  ordered_json& header = this->header(shard);
  uint64_t end = 0;
  for (auto& [key, entry] : header.items())
    if (key != "__metadata__") end = std::max(end, entry["data_offsets"][1].get<uint64_t>());
  uint64_t bytes = dtype_name_bytes(dtype);
  for (int64_t d : shape) bytes *= static_cast<uint64_t>(d);
  header[name] = tensor_entry(dtype, shape, end, end + bytes);
  if (index && indexed()) weight_map()[name] = shard;
}

void PackEditor::save() const {
  for (const auto& [name, file] : shards_) write_safetensors(dir_ / name, file);
  if (indexed()) write_file(dir_ / "model.safetensors.index.json", index_.dump(2));
  write_file(dir_ / "config.json", config_.dump(2));
}

}  // namespace dsv41::test
