// compiler/emit/phase_emitter_engram.cpp — Engram as calls (docs/model.md §8): hashes up front, rows, projection and gate per layer.
#include "compiler/emit/phase_emitter.h"

namespace dsv41 {

// The row ids of every Engram layer depend only on token ids, so one call computes them all before
// layer 0 (a GPU backend can start the host gather of a step's rows that early); the lookback then
// takes this step's tokens. Every rank computes every column: the projection wkv is replicated (its
// input is all columns' rows), and the tables are shared by the host, so nothing is exchanged.
void PhaseEmitter::emit_engram_hash() {
  const ModelConfig& c = in_.config;
  if (!c.has_engram()) return;
  std::vector<int64_t> multipliers, primes, offsets;
  for (const EngramLayerHash& h : in_.engram) {
    multipliers.insert(multipliers.end(), h.multipliers.begin(), h.multipliers.end());
    primes.insert(primes.end(), h.primes.begin(), h.primes.end());
    offsets.insert(offsets.end(), h.offsets.begin(), h.offsets.end());
  }
  const auto layers = static_cast<int64_t>(in_.engram.size());
  const int lookback = state("engram.lookback");
  add(CallBuilder("engram_hash").k("layers", layers).k("max_n", c.engram_max_ngram_size).k("heads", c.engram_n_heads)
          .k("window", c.sliding_window).statics().state("lookback", lookback)
          .integers("token_map", {in_.engram_token_map.begin(), in_.engram_token_map.end()})
          .integer("pad_token", c.engram_pad_token_id).integers("multipliers", multipliers)
          .integers("primes", primes).integers("offsets", offsets)
          .scratch("out", buffer("engram.rows", DType::I32, {layers * c.engram_columns})));
  add(CallBuilder("engram_lookback").k("window", c.sliding_window).statics().state("lookback", lookback));
}

// Before the layer's attention mix: fetch the rows (FP8 → bf16 values), project them to one key per
// stream and the value, and gate every stream in place.
void PhaseEmitter::emit_engram(int layer) {
  const ModelConfig& c = in_.config;
  const int64_t index = c.engram_index(layer), width = c.engram_columns * c.engram_head_dim;
  const std::string p = "layers." + std::to_string(layer) + ".engram.";
  const int fetched = buffer("engram.fetched", DType::BF16, {width});
  add(CallBuilder("engram_gather").k("columns", c.engram_columns).k("head_dim", c.engram_head_dim)
          .k("row_width", static_cast<int64_t>(in_.engram.size()) * c.engram_columns).statics()
          .scratch("ids", buffer("engram.rows", DType::I32, {static_cast<int64_t>(in_.engram.size()) * c.engram_columns}))
          .integer("first_column", index * c.engram_columns).integer("layer", layer)
          .weight("table", weight(p + "embed.weight")).scratch("out", fetched));
  const int64_t kv_width = (c.hc_mult + 1) * c.hidden_size;
  const int kv = buffer("engram.kv", DType::F32, {kv_width});
  add(CallBuilder("linear").k("in_features", width).k("out_features", kv_width).scratch("x", fetched)
          .weight("w", weight(p + "wkv.weight")).scratch("out", kv));
  add(CallBuilder("engram_gate").k("hidden", c.hidden_size).k("streams", c.hc_mult).scratch("x", x_).scratch("kv", kv)
          .weight("q_weight", weight(p + "q_weight")).weight("k_weight", weight(p + "k_weight"))
          .real("eps", c.rms_norm_eps).scratch("out", x_));
}

}  // namespace dsv41
