// tests/reference/reference_weights.cpp — the unsplit model at the reference's own shapes, decoded by dtype.
#include "tests/reference/reference_weights.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "common/pack_index.h"
#include "tests/reference/reference_decode.h"
#include "tests/reference/reference_wiring.h"

namespace dsv41::reference {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Reads tensors by name at the shape the reference's math expects ([out, in] for a matrix), decoding
// by the stored dtype alone: BF16, F32, F8_E4M3 with a ".scale" of UE8M0 per 32×32 tile, or I8
// holding FP4 pairs with a ".scale" per 32 of a row. Nothing here comes from common/tensor_inventory:
// a shape or layout mistake there cannot pass here too.
class TensorReader {
 public:
  explicit TensorReader(PackIndex pack) : pack_(std::move(pack)) {}

  Result<Matrix> matrix(const std::string& name, int64_t rows, int64_t cols) {
    return read(name, rows, cols, {rows, cols});
  }
  // An Engram table: FP8 codes with one scale per 32 of a row (not per 32×32 tile), or BF16.
  Result<Matrix> row_scaled(const std::string& name, int64_t rows, int64_t cols) {
    return read(name, rows, cols, {rows, cols}, true);
  }
  Result<Vec> vec(const std::string& name, int64_t n) {
    DSV41_ASSIGN_OR_RETURN(Matrix m, read(name, 1, n, {n}));
    return std::move(m.v);
  }

 private:
  Result<Matrix> read(const std::string& name, int64_t rows, int64_t cols, const std::vector<int64_t>& shape,
                      bool row_scales = false) {
    const TensorEntry* entry = pack_.find(name);
    if (!entry) return Status::errorf("{}: missing from the pack in {}", name, pack_.dir());
    Encoding encoding = Encoding::BF16;
    std::vector<int64_t> stored = shape, scale_shape;
    switch (entry->dtype) {
      case DType::BF16:
        break;
      case DType::F32:
        encoding = Encoding::Plain;
        break;
      case DType::F8_E4M3:
        encoding = row_scales ? Encoding::FP8Rows : Encoding::FP8Block;
        scale_shape = row_scales ? std::vector<int64_t>{rows, cols / 32}
                                 : std::vector<int64_t>{(rows + 31) / 32, (cols + 31) / 32};
        break;
      case DType::I8:
        encoding = Encoding::FP4Rows;
        stored = {rows, cols / 2};
        scale_shape = {rows, cols / 32};
        break;
      default:
        return Status::errorf("{}: dtype {} is not a stored form the reference reads", name, dtype_name(entry->dtype));
    }
    if (entry->shape != stored)
      return Status::errorf("{}: shape {}, the reference expects {} for {}", name, shape_text(entry->shape),
                            shape_text(stored), dtype_name(entry->dtype));
    std::vector<uint8_t> weight, scale;
    DSV41_TRY(read_bytes(*entry, weight));
    if (!scale_shape.empty()) {
      const std::string scale_name = name.substr(0, name.rfind(".weight")) + ".scale";
      const TensorEntry* s = pack_.find(scale_name);
      if (!s) return Status::errorf("{}: missing, {} is stored as {}", scale_name, name, dtype_name(entry->dtype));
      if (s->dtype != DType::F8_E8M0 || s->shape != scale_shape)
        return Status::errorf("{}: {} {}, the reference expects F8_E8M0 {}", scale_name, dtype_name(s->dtype),
                              shape_text(s->shape), shape_text(scale_shape));
      DSV41_TRY(read_bytes(*s, scale));
    }
    Matrix m;
    m.rows = rows;
    m.cols = cols;
    m.v = decode_tensor(encoding, entry->dtype == DType::F32, weight, scale, rows, cols);
    return m;
  }

  Status read_bytes(const TensorEntry& entry, std::vector<uint8_t>& out) {
    const ShardInfo& shard = pack_.shards()[entry.shard];
    auto [it, fresh] = files_.try_emplace(entry.shard);
    if (fresh) it->second.open(std::filesystem::path(pack_.dir()) / shard.file_name, std::ios::binary);
    std::ifstream& in = it->second;
    if (!in) return Status::errorf("{}: cannot open", shard.file_name);
    out.resize(entry.bytes());
    in.clear();
    in.seekg(static_cast<std::streamoff>(shard.data_start() + entry.data_begin));
    if (!in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size())))
      return Status::errorf("{}: {}: cannot read {} bytes at data offset {}", shard.file_name, entry.name,
                            entry.bytes(), entry.data_begin);
    return Status::ok();
  }

  PackIndex pack_;
  std::map<int, std::ifstream> files_;
};

Status load_hc(TensorReader& r, const ModelConfig& c, const std::string& prefix, HcWeights& hc) {
  const int64_t streams = c.hc_mult, mix = (2 + streams) * streams;  // pre | post | comb
  DSV41_ASSIGN_OR_RETURN(hc.fn, r.matrix(prefix + "_fn", mix, streams * c.hidden_size));
  DSV41_ASSIGN_OR_RETURN(hc.base, r.vec(prefix + "_base", mix));
  DSV41_ASSIGN_OR_RETURN(hc.scale, r.vec(prefix + "_scale", 3));
  return Status::ok();
}

Status load_expert(TensorReader& r, const ModelConfig& c, const std::string& prefix, ExpertWeights& e) {
  const int64_t f = c.moe_intermediate_size;
  DSV41_ASSIGN_OR_RETURN(e.w1, r.matrix(prefix + "w1.weight", f, c.hidden_size));
  DSV41_ASSIGN_OR_RETURN(e.w2, r.matrix(prefix + "w2.weight", c.hidden_size, f));
  DSV41_ASSIGN_OR_RETURN(e.w3, r.matrix(prefix + "w3.weight", f, c.hidden_size));
  return Status::ok();
}

// Engram of one layer (docs/model.md §8): the table [rows, head_dim], the projection of all columns'
// rows to S keys and the value, and the per-stream q/k gains.
Status load_engram(TensorReader& r, const ModelConfig& c, int64_t table_rows, const std::string& p, EngramWeights& e) {
  const int64_t columns = (c.engram_max_ngram_size - 1) * c.engram_n_heads;
  DSV41_ASSIGN_OR_RETURN(e.table, r.row_scaled(p + "engram.embed.weight", table_rows, c.engram_head_dim));
  DSV41_ASSIGN_OR_RETURN(e.wkv, r.matrix(p + "engram.wkv.weight", (c.hc_mult + 1) * c.hidden_size,
                                         columns * c.engram_head_dim));
  DSV41_ASSIGN_OR_RETURN(e.q_weight, r.matrix(p + "engram.q_weight", c.hc_mult, c.hidden_size));
  DSV41_ASSIGN_OR_RETURN(e.k_weight, r.matrix(p + "engram.k_weight", c.hc_mult, c.hidden_size));
  return Status::ok();
}

Status load_layer(TensorReader& r, const ModelConfig& c, const LayerWiring& role, int64_t l, LayerWeights& w) {
  const std::string p = "layers." + std::to_string(l) + ".";
  const int64_t d = c.hidden_size, heads = c.num_attention_heads;
  for (size_t i = 0; i < c.engram_layer_ids.size(); ++i)
    if (c.engram_layer_ids[i] == l) {
      w.has_engram = true;
      DSV41_TRY(load_engram(r, c, c.engram_num_embeddings[i], p, w.engram));
    }
  DSV41_ASSIGN_OR_RETURN(w.wq_a, r.matrix(p + "attn.wq_a.weight", c.q_lora_rank, d));
  DSV41_ASSIGN_OR_RETURN(w.q_norm, r.vec(p + "attn.q_norm.weight", c.q_lora_rank));
  DSV41_ASSIGN_OR_RETURN(w.wq_b, r.matrix(p + "attn.wq_b.weight", heads * c.head_dim, c.q_lora_rank));
  DSV41_ASSIGN_OR_RETURN(w.wkv, r.matrix(p + "attn.wkv.weight", c.head_dim, d));
  DSV41_ASSIGN_OR_RETURN(w.kv_norm, r.vec(p + "attn.kv_norm.weight", c.head_dim));
  DSV41_ASSIGN_OR_RETURN(w.wo_a,
                         r.matrix(p + "attn.wo_a.weight", c.o_groups * c.o_lora_rank, heads * c.head_dim / c.o_groups));
  DSV41_ASSIGN_OR_RETURN(w.wo_b, r.matrix(p + "attn.wo_b.weight", d, c.o_groups * c.o_lora_rank));
  DSV41_ASSIGN_OR_RETURN(w.attn_sink, r.vec(p + "attn.attn_sink", heads));
  if (role.kv_source) {
    DSV41_ASSIGN_OR_RETURN(w.compressor_wkv, r.matrix(p + "attn.compressor.wkv.weight", c.head_dim, d));
    if (role.ratio >= 2) {
      DSV41_ASSIGN_OR_RETURN(w.compressor_wgate, r.matrix(p + "attn.compressor.wgate.weight", c.head_dim, d));
    }
    DSV41_ASSIGN_OR_RETURN(w.compressor_norm, r.vec(p + "attn.compressor.norm.weight", c.head_dim));
    DSV41_ASSIGN_OR_RETURN(w.indexer_wk, r.matrix(p + "attn.indexer.wk.weight", c.index_head_dim, c.head_dim));
    DSV41_ASSIGN_OR_RETURN(w.indexer_k_norm, r.vec(p + "attn.indexer.k_norm.weight", c.index_head_dim));
  }
  if (role.index_source) {
    DSV41_ASSIGN_OR_RETURN(w.indexer_wq_b,
                           r.matrix(p + "attn.indexer.wq_b.weight", c.index_n_heads * c.index_head_dim, c.q_lora_rank));
    DSV41_ASSIGN_OR_RETURN(w.indexer_weights_proj,
                           r.matrix(p + "attn.indexer.weights_proj.weight", c.index_n_heads, d));
  }
  DSV41_ASSIGN_OR_RETURN(w.attn_norm, r.vec(p + "attn_norm.weight", d));
  DSV41_ASSIGN_OR_RETURN(w.ffn_norm, r.vec(p + "ffn_norm.weight", d));
  DSV41_TRY(load_hc(r, c, p + "hc_attn", w.hc_attn));
  DSV41_TRY(load_hc(r, c, p + "hc_ffn", w.hc_ffn));
  DSV41_ASSIGN_OR_RETURN(w.gate, r.matrix(p + "ffn.gate.weight", c.n_routed_experts, d));
  DSV41_ASSIGN_OR_RETURN(w.gate_bias, r.vec(p + "ffn.gate.bias", c.n_routed_experts));
  w.experts.resize(static_cast<size_t>(c.n_routed_experts));
  for (int64_t e = 0; e < c.n_routed_experts; ++e)
    DSV41_TRY(load_expert(r, c, p + "ffn.experts." + std::to_string(e) + ".", w.experts[e]));
  w.has_shared = c.n_shared_experts > 0;
  if (w.has_shared) DSV41_TRY(load_expert(r, c, p + "ffn.shared_experts.", w.shared));
  return Status::ok();
}

}  // namespace

Result<ModelWeights> load_model_weights(const ModelConfig& c, const std::string& model_dir) {
  PackIndex pack;
  DSV41_ASSIGN_OR_RETURN(pack, PackIndex::open(model_dir));
  DSV41_TRY(pack.check_data_present());
  TensorReader r(std::move(pack));
  ModelWeights w;
  DSV41_ASSIGN_OR_RETURN(w.embed, r.matrix("embed.weight", c.vocab_size, c.hidden_size));
  DSV41_ASSIGN_OR_RETURN(w.head, r.matrix("head.weight", c.vocab_size, c.hidden_size));
  DSV41_ASSIGN_OR_RETURN(w.norm, r.vec("norm.weight", c.hidden_size));
  w.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  const std::vector<LayerWiring> wiring = derive_wiring(c);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) DSV41_TRY(load_layer(r, c, wiring[l], l, w.layers[l]));
  return w;
}

}  // namespace dsv41::reference
