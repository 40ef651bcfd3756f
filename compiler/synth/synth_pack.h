// compiler/synth/synth_pack.h — `dsv41c synth-pack`: writes a synthetic model folder (shards, index, config) for a config.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/model_config.h"
#include "common/status.h"

namespace dsv41 {

enum class SynthFormat {
  BF16,     // every Linear, ExpertLinear and EmbedRows tensor as BF16
  Release,  // the release encodings: FP8 32x32 tiles, FP4 rows of 32, FP8 rows of 32 (+ UE8M0 scales)
};

struct SynthPackOptions {
  std::string out_dir;
  SynthFormat format = SynthFormat::BF16;
  bool headers_only = false;  // valid headers describing data that is not written (planning-only packs)
  uint64_t seed = 0;
  int shards = 1;  // >= 1; > 1 writes model-0000K-of-0000N.safetensors + model.safetensors.index.json
  std::function<void(const std::string&)> progress;  // optional, called once per shard written
};

// Packs with data are refused above this size: the release model's data is hundreds of GB.
constexpr uint64_t kSynthMaxDataBytes = 64ull << 30;

// Writes a pack for `config` into options.out_dir (created if missing): the shards, the index (when
// shards > 1), and a copy of `config_json_text` as out_dir/config.json, so the folder is a complete
// model folder. Files are written atomically; pack files of an earlier run that this run does not
// write (other shard counts, a stale index) are removed so PackIndex::open sees only this pack.
Status write_synth_pack(const ModelConfig& config, const std::string& config_json_text,
                        const SynthPackOptions& options);

}  // namespace dsv41
