// common/pack_index.h — tensor name → dtype, shape, shard and byte range, read from safetensors headers only.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

namespace dsv41 {

struct ShardInfo {
  std::string file_name;     // relative to the pack folder
  uint64_t header_length = 0;  // the JSON header's byte count (the u64 at offset 0)
  uint64_t data_bytes = 0;   // bytes of tensor data the header describes
  uint64_t header_digest = 0;
  uint64_t data_start() const { return 8 + header_length; }
  uint64_t expected_file_size() const { return data_start() + data_bytes; }
};

struct TensorEntry {
  std::string name;
  DType dtype = DType::U8;
  std::vector<int64_t> shape;
  int shard = 0;
  uint64_t data_begin = 0, data_end = 0;  // relative to the shard's data section
  uint64_t bytes() const { return data_end - data_begin; }
  int64_t numel() const;
};

class PackIndex {
 public:
  // Reads every shard header in DIR (through model.safetensors.index.json when present, else every
  // *.safetensors file). Never reads tensor data.
  static Result<PackIndex> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const std::vector<ShardInfo>& shards() const { return shards_; }
  const std::vector<TensorEntry>& tensors() const { return tensors_; }
  const TensorEntry* find(const std::string& name) const;
  uint64_t total_data_bytes() const;
  // Digest of shard names, header lengths, data sizes and header contents.
  uint64_t digest() const;
  // Loading checks each shard file holds all the data its header describes.
  Status check_data_present() const;

 private:
  std::string dir_;
  std::vector<ShardInfo> shards_;
  std::vector<TensorEntry> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
};

// Parses one safetensors header (the JSON text) into entries; `shard` labels messages and entries.
Status parse_safetensors_header(const std::string& header_json, const std::string& shard_name, int shard,
                                std::vector<TensorEntry>& entries, uint64_t& data_bytes);

}  // namespace dsv41
