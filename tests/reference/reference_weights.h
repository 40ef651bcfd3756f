// tests/reference/reference_weights.h — every tensor of the (unsplit) model, dequantized to fp32, grouped by layer.
#pragma once

#include <string>
#include <vector>

#include "common/model_config.h"
#include "common/status.h"
#include "tests/reference/reference_math.h"

namespace dsv41::reference {

struct HcWeights {
  Matrix fn;              // [(2 + S)·S, S·D]
  Vec base, scale;        // [(2 + S)·S], [3]
};

struct ExpertWeights {
  Matrix w1, w2, w3;      // [F, D], [D, F], [F, D]
};

struct EngramWeights {
  Matrix table;             // [table rows, head_dim], dequantized
  Matrix wkv;               // [(S + 1)·D, columns·head_dim]
  Matrix q_weight, k_weight;  // [S, D]
};

struct LayerWeights {
  // Attention, every layer.
  Matrix wq_a, wq_b, wkv, wo_a, wo_b;
  Vec q_norm, kv_norm, attn_sink;
  // Compressor and index keys (kv sources).
  Matrix compressor_wkv, compressor_wgate, indexer_wk;
  Vec compressor_norm, indexer_k_norm;
  // Indexer queries (index sources).
  Matrix indexer_wq_b, indexer_weights_proj;
  // Norms and hyper-connections.
  Vec attn_norm, ffn_norm;
  HcWeights hc_attn, hc_ffn;
  // MoE.
  Matrix gate;
  Vec gate_bias;
  std::vector<ExpertWeights> experts;
  bool has_shared = false;
  ExpertWeights shared;
  // Engram (layers in engram_layer_ids).
  bool has_engram = false;
  EngramWeights engram;
};

struct ModelWeights {
  Matrix embed, head;  // [V, D] each
  Vec norm;
  std::vector<LayerWeights> layers;
};

// Reads every tensor the forward uses, at the shapes the reference states itself (mtp.* excluded:
// DSpark is not modelled yet), from the shards of `model_dir`, decoded by its stored dtype.
Result<ModelWeights> load_model_weights(const ModelConfig& config, const std::string& model_dir);

}  // namespace dsv41::reference
