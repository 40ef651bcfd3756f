// tests/reference/reference_wiring.h — which layer feeds which, derived here from config.json's raw fields
// (compress_ratios, kv_source_layer_ids, index_source_layer_ids, candidate_source_layer_id) rather
// than taken from the implementation's LayerRole, so one wiring mistake cannot pass both.
#pragma once

#include <vector>

#include "common/model_config.h"

namespace dsv41::reference {

struct LayerWiring {
  int ratio = 0;                  // compress_ratios[l]; 0: the window only
  bool kv_source = false;         // listed in kv_source_layer_ids: owns a compressor and its caches
  bool index_source = false;      // listed in index_source_layer_ids: runs its own indexer
  bool candidate_source = false;  // candidate_source_layer_id
  bool candidate_masked = false;  // a later index source reading the candidate source's caches
  int kv_layer = -1;              // the kv source whose compressed cache this layer reads
  int index_layer = -1;           // the index source whose selection this layer uses
};

// One entry per layer. A compressed layer reads the nearest kv source at or before it and uses the
// selection of the nearest index source at or before it that reads the same kv source (docs/model.md
// §6); the config must be one ModelConfig validation accepted.
std::vector<LayerWiring> derive_wiring(const ModelConfig& config);

}  // namespace dsv41::reference
