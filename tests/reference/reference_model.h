// tests/reference/reference_model.h — an independent, unsplit fp32 forward of docs/model.md, the oracle for backends.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "common/status.h"
#include "tests/reference/reference_engram.h"
#include "tests/reference/reference_state.h"
#include "tests/reference/reference_weights.h"
#include "tests/reference/reference_wiring.h"

namespace dsv41::reference {

struct ForwardOptions {
  Rounding rounding = Rounding::BF16;  // None: the fp32 check mode of docs/model.md §2
  ReferenceStats* stats = nullptr;     // when set, counts which code paths ran
  // Engram's token map (token id → compressed id), needed by configs with Engram layers.
  const std::vector<int32_t>* engram_token_map = nullptr;
};

class ReferenceModel {
 public:
  // Loads every tensor of the model folder (config.json + safetensors shards) dequantized to fp32.
  // DSpark (mtp.*) is ignored.
  static Result<ReferenceModel> load(const std::string& model_dir);
  // A model from a validated config and weights of its shapes (tests vary window and top-k sizes this way).
  static ReferenceModel assemble(ModelConfig config, ModelWeights weights);

  // Runs the tokens one at a time from position 0 and returns fp32 logits [ids.size(), vocab_size].
  Result<std::vector<std::vector<float>>> forward(const std::vector<int32_t>& ids) const;
  Result<std::vector<std::vector<float>>> forward(const std::vector<int32_t>& ids,
                                                  const ForwardOptions& options) const;

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }

 private:
  ModelConfig config_;
  std::vector<LayerWiring> wiring_;  // derived from config_'s raw fields
  ModelWeights weights_;
  std::vector<EngramLayout> engram_;  // one per engram_layer_ids entry
};

}  // namespace dsv41::reference
