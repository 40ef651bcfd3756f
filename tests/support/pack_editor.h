// tests/support/pack_editor.h — edits a header-only pack (shard headers, index, config) to build malformed inputs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace dsv41::test {

// Loads every shard, model.safetensors.index.json (when present) and config.json of a pack folder;
// save() writes them back. Shards keep whatever data follows their header, so edits that move
// offsets are meant for header-only packs.
class PackEditor {
 public:
  explicit PackEditor(fs::path dir);

  const fs::path& dir() const { return dir_; }
  std::vector<std::string> shard_files() const;
  bool indexed() const { return !index_.is_null(); }
  // The shard whose header holds `tensor` ("" when none does).
  std::string shard_of(const std::string& tensor) const;
  ordered_json& header(const std::string& shard) { return shards_.at(shard).header; }
  ordered_json& entry(const std::string& tensor) { return header(shard_of(tensor)).at(tensor); }
  ordered_json& weight_map() { return index_.at("weight_map"); }
  ordered_json& config() { return config_; }
  // text_config when nested, else the top level.
  ordered_json& text_config();

  // Removes a tensor from its shard (later tensors move down to close the gap) and from the index.
  void remove_tensor(const std::string& name);
  // Appends a tensor at the end of `shard`'s data and, when `index` is true, to the index.
  void add_tensor(const std::string& shard, const std::string& name, const std::string& dtype,
                  const std::vector<int64_t>& shape, bool index = true);
  // Rewrites data_offsets contiguously, in the current order of the entries' begin offsets.
  void relayout(const std::string& shard);

  void save() const;

 private:
  fs::path dir_;
  std::map<std::string, SafetensorsFile> shards_;
  ordered_json index_;  // null when the pack has no index
  ordered_json config_;
};

// Bytes of one element of a safetensors dtype name (the few the tests use).
uint64_t dtype_name_bytes(const std::string& dtype);

}  // namespace dsv41::test
