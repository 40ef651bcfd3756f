// common/tensor_inventory.cpp — the release tensor inventory, derived from the config's layer roles.
#include "common/tensor_inventory.h"

namespace dsv41 {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class Inventory {
 public:
  explicit Inventory(const ModelConfig& c) : c_(c) {}

  void plain(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::BF16) {
    add({name, std::move(shape), StorageKind::Plain, dtype});
  }
  void linear(const std::string& name, int64_t out, int64_t in, SplitRule rule = SplitRule::Replicated,
              ShareAxis axis = ShareAxis::None, int64_t unit = 1) {
    add({name, {out, in}, StorageKind::Linear, DType::BF16, rule, axis, unit});
  }
  void expert(const std::string& name, int64_t out, int64_t in, SplitRule rule) {
    add({name, {out, in}, StorageKind::ExpertLinear, DType::BF16, rule, ShareAxis::ExpertCols, 1});
  }

  // The attention, norms, hyper-connection and MoE tensors of one block ("layers.L." or "mtp.i.").
  void block(const std::string& p, const LayerRole& role, int64_t experts, bool split) {
    const ModelConfig& c = c_;
    const SplitRule rows = split ? SplitRule::OutputRows : SplitRule::Replicated;
    const SplitRule cols = split ? SplitRule::InputCols : SplitRule::Replicated;
    linear(p + "attn.wq_a.weight", c.q_lora_rank, c.hidden_size);
    plain(p + "attn.q_norm.weight", {c.q_lora_rank});
    linear(p + "attn.wq_b.weight", c.num_attention_heads * c.head_dim, c.q_lora_rank, rows, ShareAxis::Heads,
           c.head_dim);
    linear(p + "attn.wkv.weight", c.head_dim, c.hidden_size);
    plain(p + "attn.kv_norm.weight", {c.head_dim});
    linear(p + "attn.wo_a.weight", c.o_groups * c.o_lora_rank, c.group_width,
           split ? SplitRule::GroupPart : SplitRule::Replicated, ShareAxis::Groups, c.o_lora_rank);
    linear(p + "attn.wo_b.weight", c.hidden_size, c.o_groups * c.o_lora_rank, cols, ShareAxis::Groups, c.o_lora_rank);
    add({p + "attn.attn_sink", {c.num_attention_heads}, StorageKind::Plain, DType::F32,
         split ? SplitRule::HeadSlice : SplitRule::Replicated, ShareAxis::Heads, 1});
    if (role.kv_source) {
      plain(p + "attn.compressor.wkv.weight", {c.head_dim, c.hidden_size});
      if (role.ratio >= 2) plain(p + "attn.compressor.wgate.weight", {c.head_dim, c.hidden_size});
      plain(p + "attn.compressor.norm.weight", {c.head_dim});
      plain(p + "attn.indexer.wk.weight", {c.index_head_dim, c.head_dim});
      plain(p + "attn.indexer.k_norm.weight", {c.index_head_dim});
    }
    if (role.index_source) {
      linear(p + "attn.indexer.wq_b.weight", c.index_n_heads * c.index_head_dim, c.q_lora_rank);
      plain(p + "attn.indexer.weights_proj.weight", {c.index_n_heads, c.hidden_size});
    }
    plain(p + "attn_norm.weight", {c.hidden_size});
    plain(p + "ffn_norm.weight", {c.hidden_size});
    for (const char* sub : {"attn", "ffn"}) {
      plain(p + "hc_" + sub + "_fn", {c.mix_hc, c.hc_dim}, DType::F32);
      plain(p + "hc_" + sub + "_base", {c.mix_hc}, DType::F32);
      plain(p + "hc_" + sub + "_scale", {3}, DType::F32);
    }
    plain(p + "ffn.gate.weight", {experts, c.hidden_size});
    plain(p + "ffn.gate.bias", {experts}, DType::F32);
    const int64_t width = c.moe_intermediate_size;
    for (int64_t e = 0; e < experts; ++e) {
      const std::string ep = p + "ffn.experts." + std::to_string(e) + ".";
      expert(ep + "w1.weight", width, c.hidden_size, rows);
      expert(ep + "w2.weight", c.hidden_size, width, cols);
      expert(ep + "w3.weight", width, c.hidden_size, rows);
    }
    if (c.n_shared_experts > 0) {
      linear(p + "ffn.shared_experts.w1.weight", width, c.hidden_size, rows, ShareAxis::ExpertCols);
      linear(p + "ffn.shared_experts.w2.weight", c.hidden_size, width, cols, ShareAxis::ExpertCols);
      linear(p + "ffn.shared_experts.w3.weight", width, c.hidden_size, rows, ShareAxis::ExpertCols);
    }
  }

  void engram(const std::string& p, int64_t table_rows) {
    const ModelConfig& c = c_;
    ExpectedTensor table{p + "engram.embed.weight", {table_rows, c.engram_head_dim}, StorageKind::EmbedRows};
    table.host_resident = true;
    add(std::move(table));
    linear(p + "engram.wkv.weight", (c.hc_mult + 1) * c.hidden_size, c.engram_columns * c.engram_head_dim);
    plain(p + "engram.q_weight", {c.hc_mult, c.hidden_size});
    plain(p + "engram.k_weight", {c.hc_mult, c.hidden_size});
  }

  void dspark() {
    const ModelConfig& c = c_;
    const int64_t blocks = c.num_nextn_predict_layers;
    // Split like the main layers (heads, groups, whole 128-column expert blocks): the draft phases run
    // tensor-parallel with the same ops and exchanges as the target's.
    for (int64_t i = 0; i < blocks; ++i) block("mtp." + std::to_string(i) + ".", LayerRole{}, c.dspark_n_routed_experts, true);
    const auto targets = static_cast<int64_t>(c.dspark_target_layer_ids.size());
    linear("mtp.0.main_proj.weight", c.hidden_size, targets * c.hidden_size);
    plain("mtp.0.main_norm.weight", {c.hidden_size});
    const std::string last = "mtp." + std::to_string(blocks - 1) + ".";
    plain(last + "norm.weight", {c.hidden_size});
    plain(last + "markov_head.embed.weight", {c.vocab_size, c.dspark_markov_rank});
    plain(last + "markov_head.head.weight", {c.vocab_size, c.dspark_markov_rank});
    plain(last + "confidence_head.proj.weight", {1, c.hidden_size + c.dspark_markov_rank});
  }

  std::vector<ExpectedTensor> take() { return std::move(list_); }

 private:
  void add(ExpectedTensor t) { list_.push_back(std::move(t)); }
  const ModelConfig& c_;
  std::vector<ExpectedTensor> list_;
};

}  // namespace

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& c) {
  Inventory inv(c);
  inv.plain("embed.weight", {c.vocab_size, c.hidden_size});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    const int64_t engram = c.engram_index(l);
    if (engram >= 0) inv.engram(p, c.engram_num_embeddings[engram]);
    inv.block(p, c.layers[l], c.n_routed_experts, true);
  }
  inv.plain("norm.weight", {c.hidden_size});
  ExpectedTensor head{"head.weight", {c.vocab_size, c.hidden_size}, StorageKind::Plain, DType::BF16,
                      SplitRule::OutputRows, ShareAxis::Vocab, 1};
  std::vector<ExpectedTensor> list = inv.take();
  list.push_back(std::move(head));
  if (c.has_dspark()) {
    Inventory mtp(c);
    mtp.dspark();
    for (auto& t : mtp.take()) list.push_back(std::move(t));
  }
  return list;
}

std::string scale_name(const std::string& weight_name) {
  const std::string suffix = ".weight";
  if (weight_name.size() > suffix.size() && weight_name.compare(weight_name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return weight_name.substr(0, weight_name.size() - suffix.size()) + ".scale";
  return weight_name + ".scale";
}

bool is_ignored_tensor(std::string_view name) {
  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  auto ends = [&](std::string_view s) { return name.size() >= s.size() && name.substr(name.size() - s.size()) == s; };
  return starts("vision.") || starts("aligner.") || starts("image_") || ends(".bias_vl");
}

std::vector<Encoding> admitted_encodings(StorageKind storage) {
  switch (storage) {
    case StorageKind::Plain: return {Encoding::Plain};
    case StorageKind::Linear: return {Encoding::BF16, Encoding::FP8Block};
    case StorageKind::ExpertLinear: return {Encoding::BF16, Encoding::FP4Rows};
    case StorageKind::EmbedRows: return {Encoding::BF16, Encoding::FP8Rows};
  }
  return {};
}

std::vector<StoredForm> stored_forms(const ExpectedTensor& t, Encoding encoding) {
  const auto& s = t.shape;
  switch (encoding) {
    case Encoding::Plain: return {{t.name, t.plain_dtype, s}};
    case Encoding::BF16: return {{t.name, DType::BF16, s}};
    case Encoding::FP8Block:
      return {{t.name, DType::F8_E4M3, s},
              {scale_name(t.name), DType::F8_E8M0, {ceil_div(s[0], kScaleBlock), ceil_div(s[1], kScaleBlock)}}};
    case Encoding::FP4Rows:
      return {{t.name, DType::I8, {s[0], s[1] / 2}}, {scale_name(t.name), DType::F8_E8M0, {s[0], s[1] / kScaleBlock}}};
    case Encoding::FP8Rows:
      return {{t.name, DType::F8_E4M3, s}, {scale_name(t.name), DType::F8_E8M0, {s[0], s[1] / kScaleBlock}}};
  }
  return {};
}

std::string_view encoding_name(Encoding e) {
  switch (e) {
    case Encoding::Plain: return "plain";
    case Encoding::BF16: return "bf16";
    case Encoding::FP8Block: return "fp8-block32";
    case Encoding::FP4Rows: return "fp4-rows32";
    case Encoding::FP8Rows: return "fp8-rows32";
  }
  return "?";
}

std::string_view split_rule_name(SplitRule r) {
  switch (r) {
    case SplitRule::Replicated: return "replicated";
    case SplitRule::OutputRows: return "output-rows";
    case SplitRule::InputCols: return "input-cols";
    case SplitRule::GroupPart: return "group-part";
    case SplitRule::HeadSlice: return "head-slice";
  }
  return "?";
}

}  // namespace dsv41
