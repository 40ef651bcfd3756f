// tests/reference/reference_weights.cpp — loads the unsplit model through PackIndex and its own decoder, checking names and shapes.
#include "tests/reference/reference_weights.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "common/pack_index.h"
#include "common/tensor_inventory.h"
#include "tests/reference/reference_decode.h"
#include "tests/reference/reference_wiring.h"

namespace dsv41::reference {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

class TensorReader {
 public:
  TensorReader(const ModelConfig& config, PackIndex pack) : pack_(std::move(pack)) {
    for (auto& t : expected_tensors(config)) expected_.emplace(t.name, std::move(t));
  }

  Result<Matrix> matrix(const std::string& name) {
    auto it = expected_.find(name);
    DSV41_CHECK(it != expected_.end());  // the loader asks only for inventory names
    const ExpectedTensor& want = it->second;
    const TensorEntry* entry = pack_.find(name);
    if (!entry) return Status::errorf("{}: missing from the pack in {}", name, pack_.dir());
    DType plain_dtype = want.plain_dtype;
    Encoding encoding;
    DSV41_ASSIGN_OR_RETURN(encoding, encoding_of(want, *entry, plain_dtype));
    const std::vector<StoredForm> forms = stored_forms(want, encoding);
    if (entry->shape != forms[0].shape)
      return Status::errorf("{}: shape {}, expected {} ({} {})", name, shape_text(entry->shape),
                            shape_text(forms[0].shape), dtype_name(entry->dtype), encoding_name(encoding));
    std::vector<uint8_t> weight, scale;
    DSV41_TRY(read_bytes(*entry, weight));
    if (forms.size() > 1) {
      const TensorEntry* s = pack_.find(forms[1].name);
      if (!s) return Status::errorf("{}: missing, {} is stored as {}", forms[1].name, name, dtype_name(entry->dtype));
      if (s->dtype != forms[1].dtype || s->shape != forms[1].shape)
        return Status::errorf("{}: {} {}, expected {} {}", s->name, dtype_name(s->dtype), shape_text(s->shape),
                              dtype_name(forms[1].dtype), shape_text(forms[1].shape));
      DSV41_TRY(read_bytes(*s, scale));
    }
    Matrix m;
    m.rows = want.shape.size() == 1 ? 1 : want.shape[0];
    m.cols = want.shape.back();
    for (size_t d = 1; d + 1 < want.shape.size(); ++d) m.cols *= want.shape[d];
    m.v = decode_tensor(encoding, plain_dtype == DType::F32, weight, scale, m.rows, m.cols);
    return m;
  }

  Result<Vec> vec(const std::string& name) {
    Matrix m;
    DSV41_ASSIGN_OR_RETURN(m, matrix(name));
    return std::move(m.v);
  }

 private:
  // The encoding a stored dtype implies for a tensor of this storage kind.
  static Result<Encoding> encoding_of(const ExpectedTensor& want, const TensorEntry& entry, DType& plain_dtype) {
    const DType d = entry.dtype;
    switch (want.storage) {
      case StorageKind::Plain:
        if (d == DType::BF16 || d == DType::F32) {
          plain_dtype = d;
          return Encoding::Plain;
        }
        break;
      case StorageKind::Linear:
        if (d == DType::BF16) return Encoding::BF16;
        if (d == DType::F8_E4M3) return Encoding::FP8Block;
        break;
      case StorageKind::ExpertLinear:
        if (d == DType::BF16) return Encoding::BF16;
        if (d == DType::I8) return Encoding::FP4Rows;
        break;
      case StorageKind::EmbedRows:
        if (d == DType::BF16) return Encoding::BF16;
        if (d == DType::F8_E4M3) return Encoding::FP8Rows;
        break;
    }
    return Status::errorf("{}: dtype {} is not a stored form of this tensor", want.name, dtype_name(d));
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
  std::map<std::string, ExpectedTensor> expected_;
  std::map<int, std::ifstream> files_;
};

Status load_hc(TensorReader& r, const std::string& prefix, HcWeights& hc) {
  DSV41_ASSIGN_OR_RETURN(hc.fn, r.matrix(prefix + "_fn"));
  DSV41_ASSIGN_OR_RETURN(hc.base, r.vec(prefix + "_base"));
  DSV41_ASSIGN_OR_RETURN(hc.scale, r.vec(prefix + "_scale"));
  return Status::ok();
}

Status load_expert(TensorReader& r, const std::string& prefix, ExpertWeights& e) {
  DSV41_ASSIGN_OR_RETURN(e.w1, r.matrix(prefix + "w1.weight"));
  DSV41_ASSIGN_OR_RETURN(e.w2, r.matrix(prefix + "w2.weight"));
  DSV41_ASSIGN_OR_RETURN(e.w3, r.matrix(prefix + "w3.weight"));
  return Status::ok();
}

Status load_layer(TensorReader& r, const ModelConfig& c, const LayerWiring& role, int64_t l, LayerWeights& w) {
  const std::string p = "layers." + std::to_string(l) + ".";
  DSV41_ASSIGN_OR_RETURN(w.wq_a, r.matrix(p + "attn.wq_a.weight"));
  DSV41_ASSIGN_OR_RETURN(w.q_norm, r.vec(p + "attn.q_norm.weight"));
  DSV41_ASSIGN_OR_RETURN(w.wq_b, r.matrix(p + "attn.wq_b.weight"));
  DSV41_ASSIGN_OR_RETURN(w.wkv, r.matrix(p + "attn.wkv.weight"));
  DSV41_ASSIGN_OR_RETURN(w.kv_norm, r.vec(p + "attn.kv_norm.weight"));
  DSV41_ASSIGN_OR_RETURN(w.wo_a, r.matrix(p + "attn.wo_a.weight"));
  DSV41_ASSIGN_OR_RETURN(w.wo_b, r.matrix(p + "attn.wo_b.weight"));
  DSV41_ASSIGN_OR_RETURN(w.attn_sink, r.vec(p + "attn.attn_sink"));
  if (role.kv_source) {
    DSV41_ASSIGN_OR_RETURN(w.compressor_wkv, r.matrix(p + "attn.compressor.wkv.weight"));
    if (role.ratio >= 2) {
      DSV41_ASSIGN_OR_RETURN(w.compressor_wgate, r.matrix(p + "attn.compressor.wgate.weight"));
    }
    DSV41_ASSIGN_OR_RETURN(w.compressor_norm, r.vec(p + "attn.compressor.norm.weight"));
    DSV41_ASSIGN_OR_RETURN(w.indexer_wk, r.matrix(p + "attn.indexer.wk.weight"));
    DSV41_ASSIGN_OR_RETURN(w.indexer_k_norm, r.vec(p + "attn.indexer.k_norm.weight"));
  }
  if (role.index_source) {
    DSV41_ASSIGN_OR_RETURN(w.indexer_wq_b, r.matrix(p + "attn.indexer.wq_b.weight"));
    DSV41_ASSIGN_OR_RETURN(w.indexer_weights_proj, r.matrix(p + "attn.indexer.weights_proj.weight"));
  }
  DSV41_ASSIGN_OR_RETURN(w.attn_norm, r.vec(p + "attn_norm.weight"));
  DSV41_ASSIGN_OR_RETURN(w.ffn_norm, r.vec(p + "ffn_norm.weight"));
  DSV41_TRY(load_hc(r, p + "hc_attn", w.hc_attn));
  DSV41_TRY(load_hc(r, p + "hc_ffn", w.hc_ffn));
  DSV41_ASSIGN_OR_RETURN(w.gate, r.matrix(p + "ffn.gate.weight"));
  DSV41_ASSIGN_OR_RETURN(w.gate_bias, r.vec(p + "ffn.gate.bias"));
  w.experts.resize(static_cast<size_t>(c.n_routed_experts));
  for (int64_t e = 0; e < c.n_routed_experts; ++e)
    DSV41_TRY(load_expert(r, p + "ffn.experts." + std::to_string(e) + ".", w.experts[e]));
  w.has_shared = c.n_shared_experts > 0;
  if (w.has_shared) DSV41_TRY(load_expert(r, p + "ffn.shared_experts.", w.shared));
  return Status::ok();
}

}  // namespace

Result<ModelWeights> load_model_weights(const ModelConfig& c, const std::string& model_dir) {
  PackIndex pack;
  DSV41_ASSIGN_OR_RETURN(pack, PackIndex::open(model_dir));
  DSV41_TRY(pack.check_data_present());
  TensorReader r(c, std::move(pack));
  ModelWeights w;
  DSV41_ASSIGN_OR_RETURN(w.embed, r.matrix("embed.weight"));
  DSV41_ASSIGN_OR_RETURN(w.head, r.matrix("head.weight"));
  DSV41_ASSIGN_OR_RETURN(w.norm, r.vec("norm.weight"));
  w.layers.resize(static_cast<size_t>(c.num_hidden_layers));
  const std::vector<LayerWiring> wiring = derive_wiring(c);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) DSV41_TRY(load_layer(r, c, wiring[l], l, w.layers[l]));
  return w;
}

}  // namespace dsv41::reference
