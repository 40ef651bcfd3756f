// tests/reference/reference_wiring.cpp — the layer wiring from the config's raw lists, searched backwards per layer.
#include "tests/reference/reference_wiring.h"

#include <algorithm>

#include "common/status.h"

namespace dsv41::reference {
namespace {

bool listed(const std::vector<int64_t>& ids, int64_t layer) {
  return std::find(ids.begin(), ids.end(), layer) != ids.end();
}

// The largest id in `ids` that is at most `layer` and passes `accept`; -1 when none.
template <class Accept>
int nearest_at_or_before(const std::vector<int64_t>& ids, int64_t layer, Accept accept) {
  int best = -1;
  for (int64_t id : ids)
    if (id <= layer && id > best && accept(id)) best = static_cast<int>(id);
  return best;
}

}  // namespace

std::vector<LayerWiring> derive_wiring(const ModelConfig& c) {
  const int64_t layers = c.num_hidden_layers;
  DSV41_CHECK(static_cast<int64_t>(c.compress_ratios.size()) >= layers);  // the release lists its MTP layers too
  std::vector<LayerWiring> wiring(static_cast<size_t>(layers));
  for (int64_t l = 0; l < layers; ++l) {
    LayerWiring& w = wiring[l];
    w.ratio = static_cast<int>(c.compress_ratios[l]);
    w.kv_source = listed(c.kv_source_layer_ids, l);
    w.index_source = listed(c.index_source_layer_ids, l);
    w.candidate_source = c.candidate_source_layer_id == l;
  }
  for (int64_t l = 0; l < layers; ++l) {
    LayerWiring& w = wiring[l];
    if (w.ratio == 0) continue;
    w.kv_layer = nearest_at_or_before(c.kv_source_layer_ids, l, [](int64_t) { return true; });
    DSV41_CHECK(w.kv_layer >= 0 && wiring[w.kv_layer].ratio == w.ratio);  // validation refuses anything else
    w.index_layer = nearest_at_or_before(c.index_source_layer_ids, l,
                                         [&](int64_t id) { return wiring[id].kv_layer == w.kv_layer; });
    DSV41_CHECK(w.index_layer >= 0);
  }
  const int64_t cand = c.candidate_source_layer_id;
  if (cand >= 0)
    for (int64_t l = cand + 1; l < layers; ++l)
      wiring[l].candidate_masked = wiring[l].index_source && wiring[l].kv_layer == wiring[cand].kv_layer;
  return wiring;
}

}  // namespace dsv41::reference
