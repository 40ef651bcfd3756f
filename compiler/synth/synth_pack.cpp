// compiler/synth/synth_pack.cpp — lays the inventory out in shards and streams synthetic weights into them.
#include "compiler/synth/synth_pack.h"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "common/tensor_inventory.h"
#include "compiler/synth/safetensors_writer.h"
#include "compiler/synth/synth_encode.h"
#include "compiler/synth/synth_values.h"

namespace dsv41 {
namespace fs = std::filesystem;

namespace {

constexpr const char* kIndexFile = "model.safetensors.index.json";

// One inventory tensor as this pack stores it: its weight and, when quantized, its scale right after.
struct PackTensor {
  const ExpectedTensor* tensor = nullptr;
  Encoding encoding = Encoding::Plain;
  std::vector<SafetensorsEntry> entries;
  uint64_t bytes = 0;
};

Encoding encoding_for(StorageKind storage, SynthFormat format) {
  if (storage == StorageKind::Plain) return Encoding::Plain;
  if (format == SynthFormat::BF16) return Encoding::BF16;
  switch (storage) {
    case StorageKind::Linear: return Encoding::FP8Block;
    case StorageKind::ExpertLinear: return Encoding::FP4Rows;
    case StorageKind::EmbedRows: return Encoding::FP8Rows;
    case StorageKind::Plain: break;
  }
  return Encoding::Plain;
}

std::vector<PackTensor> pack_tensors(const std::vector<ExpectedTensor>& inventory, SynthFormat format) {
  std::vector<PackTensor> list;
  list.reserve(inventory.size());
  for (const ExpectedTensor& t : inventory) {
    PackTensor p{&t, encoding_for(t.storage, format), {}, 0};
    for (StoredForm& f : stored_forms(t, p.encoding)) {
      p.entries.push_back({std::move(f.name), f.dtype, std::move(f.shape)});
      p.bytes += p.entries.back().bytes();
    }
    list.push_back(std::move(p));
  }
  return list;
}

// Shard of each tensor: contiguous in inventory order, split where the running byte count crosses
// multiples of total/shards, never skipping a shard and leaving no shard empty.
std::vector<int> assign_shards(const std::vector<PackTensor>& tensors, int shards) {
  uint64_t total = 0;
  for (const auto& t : tensors) total += t.bytes;
  const auto n = static_cast<int64_t>(tensors.size());
  std::vector<int> shard_of(tensors.size());
  int64_t previous = -1;
  uint64_t before = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double middle = static_cast<double>(before) + static_cast<double>(tensors[i].bytes) / 2.0;
    int64_t s = total == 0 ? 0 : static_cast<int64_t>(middle / static_cast<double>(total) * shards);
    s = std::clamp<int64_t>(s, std::max<int64_t>(previous, 0), previous + 1);
    s = std::max<int64_t>(s, shards - (n - i));  // enough tensors left for every later shard
    shard_of[i] = static_cast<int>(s);
    previous = s;
    before += tensors[i].bytes;
  }
  return shard_of;
}

std::string shard_file_name(int shard, int shards) {
  return shards == 1 ? "model.safetensors" : fmt::format("model-{:05d}-of-{:05d}.safetensors", shard + 1, shards);
}

// Streams one tensor's weight bytes in row chunks (a whole release tensor can be GBs), then its scale,
// which is at most 1/16 of the weight and so is kept until the weight is written.
Status write_tensor_data(SafetensorsFileWriter& out, const PackTensor& p, uint64_t seed) {
  const ExpectedTensor& t = *p.tensor;
  int64_t numel = 1;
  for (int64_t d : t.shape) numel *= d;
  const int64_t cols = t.shape.empty() ? 1 : t.shape.back();
  const int64_t rows = cols == 0 ? 0 : numel / cols;
  // About 1M values a chunk, whole 32-row tiles so FP8Block scales never straddle two chunks.
  const int64_t chunk_rows =
      std::max<int64_t>(kScaleBlock, (int64_t{1} << 20) / std::max<int64_t>(cols, 1) / kScaleBlock * kScaleBlock);
  const SynthValues values(t, seed);
  std::vector<float> buffer;
  std::vector<uint8_t> weight, scale;
  for (int64_t r = 0; r < rows; r += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - r);
    buffer.resize(static_cast<size_t>(n * cols));
    values.fill(r * cols, n * cols, buffer.data());
    weight.clear();
    encode_rows(p.encoding, t.plain_dtype, buffer.data(), n, cols, weight, scale);
    DSV41_TRY(out.write(weight.data(), weight.size()));
  }
  if (p.entries.size() > 1) {
    DSV41_CHECK(scale.size() == p.entries[1].bytes());
    DSV41_TRY(out.write(scale.data(), scale.size()));
  }
  return Status::ok();
}

Status write_shard(const std::string& path, const std::vector<const PackTensor*>& tensors,
                   const SynthPackOptions& options) {
  std::vector<SafetensorsEntry> entries;
  for (const PackTensor* p : tensors) entries.insert(entries.end(), p->entries.begin(), p->entries.end());
  DSV41_ASSIGN_OR_RETURN(SafetensorsFileWriter out, SafetensorsFileWriter::create(path, entries, options.headers_only));
  if (!options.headers_only)
    for (const PackTensor* p : tensors)
      DSV41_TRY(write_tensor_data(out, *p, options.seed).with_context(p->tensor->name));
  return out.finish();
}

std::string index_json(const std::vector<PackTensor>& tensors, const std::vector<int>& shard_of, int shards) {
  uint64_t total = 0;
  for (const auto& t : tensors) total += t.bytes;
  std::string out = fmt::format("{{\n  \"metadata\": {{\"total_size\": {}}},\n  \"weight_map\": {{", total);
  const char* separator = "\n";
  for (size_t i = 0; i < tensors.size(); ++i)
    for (const SafetensorsEntry& e : tensors[i].entries) {
      out += fmt::format("{}    {}: \"{}\"", separator, json_quote(e.name), shard_file_name(shard_of[i], shards));
      separator = ",\n";
    }
  return out + "\n  }\n}\n";
}

// Pack files an earlier run may have left that this run did not write: a folder must hold one pack.
Status remove_stale_pack_files(const fs::path& dir, const std::set<std::string>& written) {
  static const std::regex pattern(R"(model(-\d{5}-of-\d{5})?\.safetensors|model\.safetensors\.index\.json)");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (written.count(name) || !std::regex_match(name, pattern)) continue;
    if (!fs::remove(entry.path(), ec) || ec)
      return Status::errorf("{}: cannot remove a stale pack file ({})", entry.path().string(), ec.message());
  }
  if (ec) return Status::errorf("{}: cannot list the folder ({})", dir.string(), ec.message());
  return Status::ok();
}

}  // namespace

Status write_synth_pack(const ModelConfig& config, const std::string& config_json_text,
                        const SynthPackOptions& options) {
  if (options.out_dir.empty()) return Status::error("synth-pack: output folder: empty, expected a path");
  const std::vector<ExpectedTensor> inventory = expected_tensors(config);
  const std::vector<PackTensor> tensors = pack_tensors(inventory, options.format);
  if (options.shards < 1 || static_cast<size_t>(options.shards) > tensors.size())
    return Status::errorf("synth-pack: shards {}: expected 1 to {} (one tensor per shard at most)", options.shards,
                          tensors.size());
  uint64_t total = 0;
  for (const auto& t : tensors) total += t.bytes;
  if (!options.headers_only && total > kSynthMaxDataBytes)
    return Status::errorf(
        "synth-pack: the pack holds {} bytes ({:.1f} GiB) of weights, over the {} GiB limit for generated data; "
        "use --headers-only to write headers without data",
        total, static_cast<double>(total) / (1ull << 30), kSynthMaxDataBytes >> 30);

  const fs::path dir = options.out_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::errorf("{}: cannot create the folder ({})", dir.string(), ec.message());

  const std::vector<int> shard_of = assign_shards(tensors, options.shards);
  std::set<std::string> written;
  size_t next = 0;
  for (int s = 0; s < options.shards; ++s) {
    std::vector<const PackTensor*> members;
    uint64_t bytes = 0, stored = 0;  // stored: safetensors entries, a weight and its scale counting two
    for (; next < tensors.size() && shard_of[next] == s; ++next) {
      members.push_back(&tensors[next]);
      bytes += tensors[next].bytes;
      stored += tensors[next].entries.size();
    }
    const std::string file = shard_file_name(s, options.shards);
    DSV41_TRY(write_shard((dir / file).string(), members, options));
    written.insert(file);
    if (options.progress)
      options.progress(fmt::format("{}: {} tensors, {} data bytes{}", file, stored, bytes,
                                   options.headers_only ? " described (headers only)" : ""));
  }
  if (options.shards > 1) {
    DSV41_TRY(write_file_atomic((dir / kIndexFile).string(), index_json(tensors, shard_of, options.shards)));
    written.insert(kIndexFile);
  }
  DSV41_TRY(remove_stale_pack_files(dir, written));
  return write_file_atomic((dir / "config.json").string(), config_json_text);
}

}  // namespace dsv41
