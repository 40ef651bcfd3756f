// tests/reference/reference_engram.cpp — the reference's Engram, step by step as the architecture notes state it.
#include "tests/reference/reference_engram.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/engram_hash.h"

namespace dsv41::reference {
namespace {

bool prime(int64_t n) {
  if (n < 2) return false;
  for (int64_t d = 2; d * d <= n; ++d)
    if (n % d == 0) return false;
  return true;
}

}  // namespace

Result<std::vector<EngramLayout>> engram_layouts(const ModelConfig& c) {
  std::vector<EngramLayout> out;
  std::set<int64_t> used;
  for (size_t i = 0; i < c.engram_layer_ids.size(); ++i) {
    EngramLayout l;
    l.layer = c.engram_layer_ids[i];
    int64_t sum = 0;
    for (int64_t n = 2; n <= c.engram_max_ngram_size; ++n) {
      int64_t value = c.engram_vocab_size - 1;  // restarts for every order
      for (int64_t h = 0; h < c.engram_n_heads; ++h) {
        do ++value;
        while (!prime(value) || used.count(value));
        used.insert(value);
        l.offsets.push_back(sum);
        l.primes.push_back(value);
        sum += value;
      }
    }
    if (sum != c.engram_num_embeddings[i])
      return Status::errorf("reference: Engram layer {}: primes sum to {}, engram_num_embeddings is {}", l.layer, sum,
                            c.engram_num_embeddings[i]);
    DSV41_ASSIGN_OR_RETURN(l.multipliers,
                           engram_multipliers(l.layer, c.engram_compressed_vocab_size, c.engram_max_ngram_size));
    out.push_back(std::move(l));
  }
  return out;
}

Status engram_apply(const ModelConfig& c, const EngramLayout& layout, const EngramWeights& w,
                    const std::vector<int64_t>& compressed, int64_t t, int64_t pad, Vec& streams) {
  const int64_t heads = c.engram_n_heads, dim = c.engram_head_dim, d = c.hidden_size, s_count = c.hc_mult;
  // Hash at position t: rolling XOR of token(t−s)·m[s]; before the start the pad (sticky).
  Vec rows_flat;
  uint64_t rolling = 0;
  for (int64_t s = 0; s < c.engram_max_ngram_size; ++s) {
    const int64_t value = t - s < 0 ? pad : compressed[t - s];
    rolling ^= static_cast<uint64_t>(value) * static_cast<uint64_t>(layout.multipliers[s]);
    if (s == 0) continue;
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t col = (s - 1) * heads + h, p = layout.primes[col];
      const auto signed_rolling = static_cast<int64_t>(rolling);
      const int64_t row = ((signed_rolling % p) + p) % p + layout.offsets[col];
      if (row < 0 || row >= w.table.rows)
        return Status::errorf("reference: Engram layer {} position {} column {}: row {} outside {}", layout.layer, t,
                              col, row, w.table.rows);
      for (int64_t k = 0; k < dim; ++k) rows_flat.push_back(bf(w.table.row(row)[k]));
    }
  }
  // kv = rows · wkvᵀ: S keys then the value.
  const Vec kv = matvec(w.wkv, rows_flat);
  const float* value = kv.data() + s_count * d;
  for (int64_t i = 0; i < s_count; ++i) {
    float* h = streams.data() + i * d;
    const float* key = kv.data() + i * d;
    double hh = 0, kk = 0, dot = 0;
    for (int64_t k = 0; k < d; ++k) {
      hh += double{h[k]} * h[k];
      kk += double{key[k]} * key[k];
      dot += double{h[k]} * w.q_weight.row(i)[k] * w.k_weight.row(i)[k] * key[k];
    }
    const double eps = c.rms_norm_eps;
    const double x = dot / std::sqrt(hh / d + eps) / std::sqrt(kk / d + eps) / std::sqrt(static_cast<double>(d));
    const double sign = x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
    const auto g = static_cast<float>(1.0 / (1.0 + std::exp(-sign * std::sqrt(std::max(std::fabs(x), 1e-6)))));
    for (int64_t k = 0; k < d; ++k) h[k] = bf(h[k] + g * value[k]);
  }
  return Status::ok();
}

}  // namespace dsv41::reference
