// tests/reference/reference_indexer.cpp — compressor (pooled or per-token entries, index keys) and the indexer with candidate blocks.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/reference/reference_attention.h"

namespace dsv41::reference {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Writes entry j of a kv source from its pre-RoPE latent: the compressed row and the index key.
void write_entry(const AttentionContext& ctx, const Vec& latent, int64_t j) {
  const ModelConfig& c = ctx.config;
  const LayerWeights& w = ctx.weights.layers[ctx.layer];
  LayerCache& cache = ctx.sequence.layers[ctx.layer];
  DSV41_CHECK(static_cast<int64_t>(cache.compressed.size()) == j);
  const int64_t first = j * ctx.wiring.ratio;  // the group's first position
  Vec row = latent;
  ctx.rope.apply(row.data(), c.head_dim, first);
  bf_inplace(row);
  cache.compressed.push_back(std::move(row));
  Vec key = rms_norm(matvec(w.indexer_wk, latent), w.indexer_k_norm, c.rms_norm_eps);
  ctx.rope.apply(key.data(), c.index_head_dim, first);
  bf_inplace(key);
  cache.index_keys.push_back(std::move(key));
  if (ctx.stats) ctx.stats->entries_written++;
}

}  // namespace

void run_compressor(const AttentionContext& ctx, const Vec& x) {
  const ModelConfig& c = ctx.config;
  const LayerWeights& w = ctx.weights.layers[ctx.layer];
  const int64_t ratio = ctx.wiring.ratio, p = ctx.position;
  if (ratio == 1) {
    write_entry(ctx, rms_norm(matvec(w.compressor_wkv, x), w.compressor_norm, c.rms_norm_eps), p);
    return;
  }
  LayerCache& cache = ctx.sequence.layers[ctx.layer];
  cache.tail_kv.push_back(matvec(w.compressor_wkv, x));
  cache.tail_gate.push_back(matvec(w.compressor_wgate, x));
  if ((p + 1) % ratio != 0) return;
  DSV41_CHECK(static_cast<int64_t>(cache.tail_kv.size()) == ratio);  // the group is p-r+1 .. p
  Vec pooled(static_cast<size_t>(c.head_dim));
  for (int64_t d = 0; d < c.head_dim; ++d) {
    float top = kNegInf;
    for (int64_t k = 0; k < ratio; ++k) top = std::max(top, cache.tail_gate[k][d]);
    float total = 0.0f, acc = 0.0f;
    for (int64_t k = 0; k < ratio; ++k) {
      const float e = std::exp(cache.tail_gate[k][d] - top);
      total += e;
      acc += e * cache.tail_kv[k][d];
    }
    pooled[d] = acc / total;
  }
  cache.tail_kv.clear();
  cache.tail_gate.clear();
  write_entry(ctx, rms_norm(pooled, w.compressor_norm, c.rms_norm_eps), p / ratio);
  if (ctx.stats) ctx.stats->groups_closed++;
}

std::vector<int64_t> run_indexer(const AttentionContext& ctx, const Vec& x, const Vec& qr) {
  const ModelConfig& c = ctx.config;
  const LayerWiring& role = ctx.wiring;
  const LayerWeights& w = ctx.weights.layers[ctx.layer];
  const std::vector<Vec>& keys = ctx.sequence.layers[role.kv_layer].index_keys;
  const int64_t n = (ctx.position + 1) / role.ratio;
  DSV41_CHECK(static_cast<int64_t>(keys.size()) == n);
  const int64_t heads = c.index_n_heads, width = c.index_head_dim;

  Vec iq = matvec(w.indexer_wq_b, qr);
  bf_inplace(iq);
  for (int64_t h = 0; h < heads; ++h) ctx.rope.apply(iq.data() + h * width, width, ctx.position);
  Vec weight = matvec(w.indexer_weights_proj, x);
  const float factor_dim = static_cast<float>(1.0 / std::sqrt(static_cast<double>(width)));
  const float factor_heads = static_cast<float>(1.0 / std::sqrt(static_cast<double>(heads)));
  for (float& v : weight) v = v * factor_dim * factor_heads;

  Vec score(static_cast<size_t>(n), 0.0f);
  for (int64_t s = 0; s < n; ++s)
    for (int64_t h = 0; h < heads; ++h)
      score[s] += weight[h] * std::max(0.0f, dot(iq.data() + h * width, keys[s].data(), width));

  const int64_t block = c.candidate_block_size;
  if (role.candidate_source) {
    const int64_t blocks = (n + block - 1) / block;
    Vec best(static_cast<size_t>(blocks), kNegInf);
    for (int64_t s = 0; s < n; ++s) best[s / block] = std::max(best[s / block], score[s]);
    if (blocks > 0) best[(n - 1) / block] = std::numeric_limits<float>::infinity();
    std::vector<int64_t> order(static_cast<size_t>(blocks));
    for (int64_t b = 0; b < blocks; ++b) order[b] = b;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return best[a] > best[b]; });
    order.resize(static_cast<size_t>(std::min(blocks, c.candidate_topk_blocks)));
    std::sort(order.begin(), order.end());
    ctx.row.candidate_blocks = std::move(order);
    ctx.row.candidates_published = true;
  }
  if (role.candidate_masked) {
    DSV41_CHECK(ctx.row.candidates_published);
    const auto& kept = ctx.row.candidate_blocks;
    bool removed = false;
    for (int64_t s = 0; s < n; ++s)
      if (!std::binary_search(kept.begin(), kept.end(), s / block)) {
        score[s] = kNegInf;
        removed = true;
      }
    if (removed && ctx.stats) ctx.stats->candidate_maskings++;
  }

  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t s = 0; s < n; ++s) order[s] = s;
  // Higher score first, then lower index (stable sort over ascending indices).
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  order.resize(static_cast<size_t>(std::min(n, c.index_topk)));
  std::erase_if(order, [&](int64_t s) { return score[s] == kNegInf; });
  std::sort(order.begin(), order.end());
  if (ctx.stats) {
    ctx.stats->max_visible = std::max(ctx.stats->max_visible, n);
    if (static_cast<int64_t>(order.size()) < n) ctx.stats->topk_truncations++;
  }
  return order;
}

}  // namespace dsv41::reference
