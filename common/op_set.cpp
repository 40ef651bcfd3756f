// common/op_set.cpp — the op table and the shape check every call passes, at emit time and at load time.
#include "common/op_set.h"

#include <algorithm>

namespace dsv41 {
namespace {

constexpr ArgKind S = ArgKind::Scratch, ST = ArgKind::State, SX = ArgKind::Statics, W = ArgKind::Weight,
                  WL = ArgKind::WeightList, I = ArgKind::Int, F = ArgKind::Float, IL = ArgKind::IntList;

// RoPE run-time parameters, shared by the ops that rotate.
std::vector<ArgSpec> with_rope(std::vector<ArgSpec> args) {
  for (ArgSpec a : {ArgSpec{"theta", F}, ArgSpec{"yarn_factor", F}, ArgSpec{"yarn_original", I},
                    ArgSpec{"beta_fast", F}, ArgSpec{"beta_slow", F}})
    args.push_back(a);
  return args;
}

std::vector<OpSpec> build_specs() {
  return {
      {"embed", {"hidden", "streams"}, {{"statics", SX}, {"table", W}, {"out", S}}},
      {"hc_pre_init", {"streams", "mix"}, {{"out", S}}},
      {"hc_collapse_norm", {"hidden", "streams"}, {{"x", S}, {"mix", S}, {"norm", W}, {"eps", F}, {"out", S}}},
      {"hc_mix", {"hidden", "streams", "sinkhorn_iters"},
       {{"x", S}, {"fn", W}, {"base", W}, {"scale", W}, {"eps", F}, {"hc_eps", F}, {"out", S}}},
      {"hc_post", {"hidden", "streams"}, {{"x", S}, {"sub", S}, {"mix", S}, {"out", S}}},
      {"linear", {"in_features", "out_features"}, {{"x", S}, {"w", W}, {"out", S}}},
      {"grouped_linear", {"groups", "in_per_group", "out_per_group"}, {{"x", S}, {"w", W}, {"out", S}}},
      {"rmsnorm", {"width"}, {{"x", S}, {"w", W}, {"eps", F}, {"out", S}}},
      {"rope", {"heads", "head_dim", "rope_dim", "inverse"}, with_rope({{"statics", SX}, {"x", S}, {"out", S}})},
      {"rmsnorm_rope", {"width", "rope_dim"},
       with_rope({{"statics", SX}, {"x", S}, {"w", W}, {"eps", F}, {"out", S}})},
      {"compress", {"ratio", "head_dim", "index_head_dim", "rope_dim"},
       with_rope({{"statics", SX}, {"raw", S}, {"gate", S, true}, {"norm", W}, {"wk", W}, {"k_norm", W},
                  {"eps", F}, {"tail", ST, true}, {"cache", ST}, {"index_cache", ST}})},
      {"index_select", {"index_heads", "index_head_dim", "ratio", "topk", "mode", "cand_blocks", "cand_block_size"},
       {{"statics", SX}, {"iq", S}, {"iw", S}, {"index_cache", ST}, {"candidates", S, true}, {"out", S}}},
      {"sparse_attention", {"heads", "head_dim", "window", "topk", "rope_dim"},
       with_rope({{"statics", SX}, {"q", S}, {"kv", S}, {"ring", ST}, {"cache", ST, true}, {"selected", S, true},
                  {"sink", W}, {"scale", F}, {"out", S}})},
      {"window_store", {"window", "head_dim"}, {{"statics", SX}, {"kv", S}, {"ring", ST}}},
      {"exchange_sum", {"width"}, {{"x", S}, {"out", S}}},
      {"exchange_gather", {"width"}, {{"x", S}, {"widths", IL}, {"out", S}}},
      {"router", {"hidden", "experts", "topk"},
       {{"x", S}, {"gate", W}, {"bias", W}, {"scaling", F}, {"normalize", I}, {"ids", S}, {"weights", S}}},
      // shared_w*: the shared expert in the same launch (decode phases), added after the routed sum.
      {"moe_experts", {"hidden", "width", "experts", "topk"},
       {{"x", S}, {"ids", S}, {"weights", S}, {"w1", WL}, {"w3", WL}, {"w2", WL}, {"shared_w1", W, true},
        {"shared_w3", W, true}, {"shared_w2", W, true}, {"limit", F}, {"out", S}, {"work", S}}},
      {"shared_expert", {"hidden", "width"},
       {{"x", S}, {"w1", W}, {"w3", W}, {"w2", W}, {"limit", F}, {"out", S}, {"work", S}}},
      // Engram (docs/ops.md "Engram"): hash of every Engram layer, lookback store, row gather, gate.
      {"engram_hash", {"layers", "max_n", "heads", "window"},
       {{"statics", SX}, {"lookback", ST}, {"token_map", IL}, {"pad_token", I}, {"multipliers", IL},
        {"primes", IL}, {"offsets", IL}, {"out", S}}},
      {"engram_lookback", {"window"}, {{"statics", SX}, {"lookback", ST}}},
      {"engram_gather", {"columns", "head_dim", "row_width"},
       {{"statics", SX}, {"ids", S}, {"first_column", I}, {"layer", I}, {"table", W}, {"out", S}}},
      {"engram_gate", {"hidden", "streams"},
       {{"x", S}, {"kv", S}, {"q_weight", W}, {"k_weight", W}, {"eps", F}, {"out", S}}},
      // DSpark (docs/ops.md "DSpark"): taps of the target's streams, the draft blocks' attention, the Markov head.
      {"stream_mean", {"hidden", "streams", "taps"}, {{"statics", SX}, {"x", S}, {"tap", I}, {"out", S}}},
      {"block_attention", {"heads", "head_dim", "window"},
       {{"statics", SX}, {"q", S}, {"kv", S}, {"ring", ST}, {"sink", W}, {"scale", F}, {"out", S}}},
      {"markov_logits", {"vocab", "rank"},
       {{"statics", SX}, {"base", S}, {"embed", W}, {"head", W}, {"picks", S}, {"step", I}, {"out", S}}},
      {"markov_pick", {"vocab"}, {{"statics", SX}, {"logits", S}, {"step", I}, {"picks", S}}},
  };
}

}  // namespace

const std::vector<OpSpec>& op_specs() {
  static const std::vector<OpSpec> specs = build_specs();
  return specs;
}

const OpSpec* find_op(std::string_view name) {
  for (const OpSpec& spec : op_specs())
    if (spec.name == name) return &spec;
  return nullptr;
}

Status check_call_shape(const Call& call) {
  const OpSpec* spec = find_op(call.op);
  if (!spec) return Status::errorf("op \"{}\": not in the op set", call.op);
  if (call.constants.size() != spec->constants.size())
    return Status::errorf("op {}: {} constants, expected {}", call.op, call.constants.size(), spec->constants.size());
  for (size_t i = 0; i < spec->constants.size(); ++i)
    if (call.constants[i].name != spec->constants[i])
      return Status::errorf("op {}: constant {} is \"{}\", expected \"{}\"", call.op, i, call.constants[i].name,
                            spec->constants[i]);
  for (const Arg& arg : call.args) {
    auto it = std::find_if(spec->args.begin(), spec->args.end(), [&](const ArgSpec& a) { return a.name == arg.name; });
    if (it == spec->args.end()) return Status::errorf("op {}: unknown argument \"{}\"", call.op, arg.name);
    if (it->kind != arg.kind) return Status::errorf("op {}: argument {} has the wrong kind", call.op, arg.name);
    const bool needs_index = arg.kind == ArgKind::Scratch || arg.kind == ArgKind::State ||
                             arg.kind == ArgKind::Weight || arg.kind == ArgKind::Int;
    if (needs_index && arg.ints.size() != 1)
      return Status::errorf("op {}: argument {} needs exactly one value", call.op, arg.name);
  }
  for (const ArgSpec& a : spec->args) {
    const bool present = std::any_of(call.args.begin(), call.args.end(), [&](const Arg& x) { return x.name == a.name; });
    if (!present && !a.optional) return Status::errorf("op {}: argument \"{}\" missing", call.op, a.name);
  }
  return Status::ok();
}

int64_t Call::constant(const std::string& name) const {
  for (const Constant& c : constants)
    if (c.name == name) return c.value;
  std::fprintf(stderr, "dsv41: internal error: op %s has no constant %s\n", op.c_str(), name.c_str());
  std::abort();
}

const Arg* Call::find_arg(const std::string& name) const {
  for (const Arg& a : args)
    if (a.name == name) return &a;
  return nullptr;
}

const Arg& Call::arg(const std::string& name) const {
  if (const Arg* a = find_arg(name)) return *a;
  std::fprintf(stderr, "dsv41: internal error: op %s has no argument %s\n", op.c_str(), name.c_str());
  std::abort();
}

}  // namespace dsv41
