// compiler/emit/phase_emitter.cpp — buffers, call building and the top level of one phase (embed, layers, head).
#include "compiler/emit/phase_emitter.h"

#include "common/op_set.h"

namespace dsv41 {

CallBuilder& CallBuilder::k(std::string name, int64_t value) {
  call_.constants.push_back({std::move(name), value});
  return *this;
}
CallBuilder& CallBuilder::scratch(std::string name, int index) {
  call_.args.push_back({std::move(name), ArgKind::Scratch, {index}, 0.0});
  return *this;
}
CallBuilder& CallBuilder::state(std::string name, int index) {
  call_.args.push_back({std::move(name), ArgKind::State, {index}, 0.0});
  return *this;
}
CallBuilder& CallBuilder::statics() {
  call_.args.push_back({"statics", ArgKind::Statics, {}, 0.0});
  return *this;
}
CallBuilder& CallBuilder::weight(std::string name, int index) {
  call_.args.push_back({std::move(name), ArgKind::Weight, {index}, 0.0});
  return *this;
}
CallBuilder& CallBuilder::weights(std::string name, std::vector<int64_t> indices) {
  call_.args.push_back({std::move(name), ArgKind::WeightList, std::move(indices), 0.0});
  return *this;
}
CallBuilder& CallBuilder::integer(std::string name, int64_t value) {
  call_.args.push_back({std::move(name), ArgKind::Int, {value}, 0.0});
  return *this;
}
CallBuilder& CallBuilder::real(std::string name, double value) {
  call_.args.push_back({std::move(name), ArgKind::Float, {}, value});
  return *this;
}
CallBuilder& CallBuilder::integers(std::string name, std::vector<int64_t> values) {
  call_.args.push_back({std::move(name), ArgKind::IntList, std::move(values), 0.0});
  return *this;
}
Call CallBuilder::finish() {
  const Status status = check_call_shape(call_);
  if (!status.is_ok()) {  // the emitter only builds calls of the op set: anything else is a bug here
    std::fprintf(stderr, "dsv41: internal error: emitted %s\n", status.message().c_str());
    std::abort();
  }
  return std::move(call_);
}

PhaseEmitter::PhaseEmitter(const EmitInputs& inputs, PhaseKind kind, int64_t rows, bool draft) : in_(inputs), draft_(draft) {
  phase_.kind = kind;
  phase_.rows = rows;
  phase_.name = (draft ? "draft.r" : kind == PhaseKind::Decode ? "decode.r" : "prefill.n") + std::to_string(rows);
}

int PhaseEmitter::buffer(const std::string& name, DType dtype, std::vector<int64_t> row_shape) {
  auto it = buffer_index_.find(name);
  if (it != buffer_index_.end()) return it->second;  // one buffer per role, reused by every layer
  if (dtype == DType::BF16) dtype = in_.activations;
  std::vector<int64_t> shape{phase_.rows};
  shape.insert(shape.end(), row_shape.begin(), row_shape.end());
  phase_.arena_bytes = append_buffer(phase_.buffers, phase_.arena_bytes, name, dtype, std::move(shape));
  const int index = static_cast<int>(phase_.buffers.size()) - 1;
  buffer_index_.emplace(name, index);
  return index;
}

int PhaseEmitter::weight(const std::string& name) const {
  auto it = in_.weight_index.find(name);
  DSV41_CHECK(it != in_.weight_index.end());  // the weight plan holds every tensor of the inventory
  return it->second;
}

int PhaseEmitter::state(const std::string& name) const {
  const int index = in_.state.index_of(name);
  DSV41_CHECK(index >= 0);
  return index;
}

CallBuilder& PhaseEmitter::with_rope(CallBuilder& b, int layer) {
  const ModelConfig& c = in_.config;
  const bool compressed = !is_draft_block(layer) && c.layers[layer].ratio > 0;  // draft blocks: ratio 0
  const bool yarn = compressed && c.rope_scaling.type == "yarn";
  return b.real("theta", compressed ? c.compress_rope_theta : c.rope_theta)
      .real("yarn_factor", yarn ? c.rope_scaling.factor : 1.0)
      .integer("yarn_original", yarn ? c.rope_scaling.original_max_position_embeddings : 0)
      .real("beta_fast", c.rope_scaling.beta_fast)
      .real("beta_slow", c.rope_scaling.beta_slow);
}

int PhaseEmitter::emit_hc_collapse_and_mix(const std::string& p, const std::string& sublayer,
                                          const std::string& previous) {
  const ModelConfig& c = in_.config;
  const int mix = buffer("mix." + sublayer, DType::F32, {c.mix_hc});
  const std::string hc = p + "hc_" + sublayer;
  // The collapse with the previous sublayer's pre (docs/model.md §5) first: the sublayer's next calls need
  // its normed rows; then this sublayer's mix, which only hc_post and the next collapse read. Two calls, not
  // one launch of both: a graph runs the mix on its other lane beside the sublayer (docs/cuda-backend.md
  // "Two lanes in a graph"), off the path the sublayer waits on (docs/perf.md, eleventh session).
  add(CallBuilder("hc_collapse_norm").k("hidden", c.hidden_size).k("streams", c.hc_mult).scratch("x", x_)
          .scratch("mix", buffer("mix." + previous, DType::F32, {c.mix_hc}))
          .weight("norm", weight(p + sublayer + "_norm.weight")).real("eps", c.rms_norm_eps)
          .scratch("out", buffer("x.norm", DType::BF16, {c.hidden_size})));
  add(CallBuilder("hc_mix").k("hidden", c.hidden_size).k("streams", c.hc_mult).k("sinkhorn_iters", c.hc_sinkhorn_iters)
          .scratch("x", x_).weight("fn", weight(hc + "_fn")).weight("base", weight(hc + "_base"))
          .weight("scale", weight(hc + "_scale")).real("eps", c.rms_norm_eps).real("hc_eps", c.hc_eps)
          .scratch("out", mix));
  return mix;
}

void PhaseEmitter::emit_hc_post(int mix) {
  const ModelConfig& c = in_.config;
  add(CallBuilder("hc_post").k("hidden", c.hidden_size).k("streams", c.hc_mult)
          .scratch("x", x_).scratch("sub", buffer("sub", DType::BF16, {c.hidden_size})).scratch("mix", mix)
          .scratch("out", x_next_));
  std::swap(x_, x_next_);
}

std::string PhaseEmitter::block_prefix(int layer) const {
  if (is_draft_block(layer)) return "mtp." + std::to_string(layer - in_.config.num_hidden_layers) + ".";
  return "layers." + std::to_string(layer) + ".";
}

void PhaseEmitter::emit_embed() {
  const ModelConfig& c = in_.config;
  x_ = buffer("streams.a", DType::BF16, {c.hc_mult, c.hidden_size});
  x_next_ = buffer("streams.b", DType::BF16, {c.hc_mult, c.hidden_size});
  add(CallBuilder("embed").k("hidden", c.hidden_size).k("streams", c.hc_mult).statics()
          .weight("table", weight("embed.weight")).scratch("out", x_));
  // The first collapse uses a one-hot pre on stream 0 (the "delayed pre" starts there).
  add(CallBuilder("hc_pre_init").k("streams", c.hc_mult).k("mix", c.mix_hc)
          .scratch("out", buffer("mix.ffn", DType::F32, {c.mix_hc})));
}

Phase PhaseEmitter::emit() {
  const ModelConfig& c = in_.config;
  if (draft_) {
    emit_draft();
    return std::move(phase_);
  }
  emit_embed();
  emit_engram_hash();
  for (int layer = 0; layer < c.num_hidden_layers; ++layer) {
    if (in_.dspark) emit_tap(layer);  // the input of the layer, before Engram changes the streams
    if (c.layers[layer].engram) emit_engram(layer);
    emit_attention(layer);
    emit_ffn(layer);
  }
  if (in_.dspark) emit_draft_context();
  emit_head("norm.weight", "logits");
  return std::move(phase_);
}

}  // namespace dsv41
