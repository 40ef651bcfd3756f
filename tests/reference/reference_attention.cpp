// tests/reference/reference_attention.cpp — query, window ring, sparse softmax with sink, inverse RoPE, grouped wo_a, wo_b.
#include <algorithm>
#include <cmath>

#include "tests/reference/reference_attention.h"

namespace dsv41::reference {
namespace {

// The selection this layer attends with: its own indexer's, or its index layer's (same row).
std::vector<int64_t> selection_for(const AttentionContext& ctx, const Vec& x, const Vec& qr) {
  const LayerWiring& role = ctx.wiring;
  if (role.ratio == 0) return {};
  if (role.index_source) {
    ctx.row.selection[ctx.layer] = run_indexer(ctx, x, qr);
    return ctx.row.selection[ctx.layer];
  }
  DSV41_CHECK(role.index_layer >= 0 && role.index_layer < ctx.layer);
  if (ctx.stats) ctx.stats->reused_selections++;
  return ctx.row.selection[role.index_layer];
}

}  // namespace

Vec run_attention(const AttentionContext& ctx, const Vec& x) {
  const ModelConfig& c = ctx.config;
  const LayerWiring& role = ctx.wiring;
  const LayerWeights& w = ctx.weights.layers[ctx.layer];
  const int64_t p = ctx.position, dh = c.head_dim, heads = c.num_attention_heads, window = c.sliding_window;

  // §6.1 query and window row.
  const Vec qr = rms_norm(matvec(w.wq_a, x), w.q_norm, c.rms_norm_eps);
  Vec q = matvec(w.wq_b, qr);
  bf_inplace(q);
  for (int64_t h = 0; h < heads; ++h) ctx.rope.apply(q.data() + h * dh, dh, p);
  Vec kv = rms_norm(matvec(w.wkv, x), w.kv_norm, c.rms_norm_eps);
  ctx.rope.apply(kv.data(), dh, p);
  bf_inplace(kv);
  LayerCache& cache = ctx.sequence.layers[ctx.layer];
  if (cache.window.empty()) cache.window.resize(static_cast<size_t>(window));
  if (p >= window && ctx.stats) ctx.stats->ring_overwrites++;
  cache.window[p % window] = std::move(kv);

  // §6.2-6.3 compressed entries and the selection.
  if (role.kv_source) run_compressor(ctx, x);
  const std::vector<int64_t> selected = selection_for(ctx, x, qr);

  // §6.4 key rows: the window (oldest first), then the selected compressed rows.
  std::vector<const float*> keys;
  for (int64_t t = std::max<int64_t>(0, p - window + 1); t <= p; ++t) keys.push_back(cache.window[t % window].data());
  const int64_t window_rows = static_cast<int64_t>(keys.size());
  if (!selected.empty()) {
    const std::vector<Vec>& rows = ctx.sequence.layers[role.kv_layer].compressed;
    for (int64_t s : selected) keys.push_back(rows.at(static_cast<size_t>(s)).data());
  }
  if (ctx.stats) {
    ctx.stats->max_window_rows = std::max(ctx.stats->max_window_rows, window_rows);
    ctx.stats->max_selected = std::max(ctx.stats->max_selected, static_cast<int64_t>(selected.size()));
  }

  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dh)));
  Vec o(static_cast<size_t>(heads * dh));
  Vec logit(keys.size());
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q.data() + h * dh;
    const float sink = w.attn_sink[h];
    float top = sink;
    for (size_t j = 0; j < keys.size(); ++j) top = std::max(top, logit[j] = dot(qh, keys[j], dh) * scale);
    float denominator = std::exp(sink - top);
    float* oh = o.data() + h * dh;
    std::fill(oh, oh + dh, 0.0f);
    for (size_t j = 0; j < keys.size(); ++j) {
      const float e = std::exp(logit[j] - top);
      denominator += e;
      for (int64_t d = 0; d < dh; ++d) oh[d] += e * keys[j][d];
    }
    for (int64_t d = 0; d < dh; ++d) oh[d] = bf(oh[d] / denominator);
    // §6.5 undo the rotation V carries, per head.
    ctx.rope.apply(oh, dh, p, /*inverse=*/true);
    for (int64_t d = 0; d < dh; ++d) oh[d] = bf(oh[d]);
  }

  // §6.5 block-diagonal wo_a: group g reads only its heads, then wo_b.
  Vec z;
  z.reserve(static_cast<size_t>(c.o_groups * c.o_lora_rank));
  for (int64_t g = 0; g < c.o_groups; ++g) {
    Vec zg = matvec(w.wo_a, o.data() + g * c.group_width, g * c.o_lora_rank, c.o_lora_rank);
    for (float v : zg) z.push_back(bf(v));
  }
  Vec out = matvec(w.wo_b, z);
  bf_inplace(out);
  return out;
}

}  // namespace dsv41::reference
