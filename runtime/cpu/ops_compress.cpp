// runtime/cpu/ops_compress.cpp — the compressor (docs/model.md §6.2): gated pooling of r raw rows, compressed row and index key.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/cache_rows.h"
#include "runtime/cpu/ops.h"

namespace dsv41::cpu {
namespace {

struct CompressShape {
  int64_t ratio, head_dim, index_dim;
  float eps;
  const float* norm;
  const float* wk;
  const float* k_norm;
  std::vector<double> freqs;
};

// Writes entry j of the slot's caches from its latent (an RMSNorm output, before RoPE). `round`: the
// bf16 rounding of served activations (packed caches round the bf16 values, as the official code does).
Status write_entry(const CompressShape& c, const CacheRows& cache, const CacheRows& index_cache, bool round, int slot,
                   int64_t row, int64_t position, const std::vector<float>& latent, int64_t j) {
  const int64_t capacity = std::min(cache.rows(), index_cache.rows());
  if (j >= capacity)
    return Status::errorf("op compress: row {} at position {} closes entry {}, but slot {} holds {} entries", row,
                          position, j, slot, capacity);
  const int64_t first = j * c.ratio;  // the group's first position
  std::vector<float> rotated = latent;
  rope_rotate(rotated.data(), c.head_dim, c.freqs, first, false);
  if (cache.packed && round) for (float& v : rotated) v = bf16_round(v);
  cache.write(j, rotated.data());  // a BF16 cache rounds at the store

  std::vector<float> key(static_cast<size_t>(c.index_dim));
  matvec(c.wk, latent.data(), c.index_dim, c.head_dim, key.data());
  rms_norm(key.data(), c.k_norm, c.index_dim, c.eps, round, key.data());
  rope_rotate(key.data(), c.index_dim, c.freqs, first, false);
  if (index_cache.packed && round) for (float& v : key) v = bf16_round(v);
  index_cache.write(j, key.data());
  return Status::ok();
}

// pooled[d] = Σ_k softmax_k(g_k[d])·u_k[d] over the r (u | g) rows of the group starting at
// position `first` (row p of the tail holds position p mod its rows).
std::vector<float> pool(const TensorView& tail, int64_t first, int64_t ratio, int64_t head_dim) {
  std::vector<float> rows(static_cast<size_t>(ratio * 2 * head_dim));
  const int64_t tail_rows = tail.numel() / (2 * head_dim);
  for (int64_t k = 0; k < ratio; ++k)
    read_floats(tail, ((first + k) % tail_rows) * 2 * head_dim, 2 * head_dim, rows.data() + k * 2 * head_dim);
  std::vector<float> pooled(static_cast<size_t>(head_dim));
  for (int64_t d = 0; d < head_dim; ++d) {
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t k = 0; k < ratio; ++k) top = std::max(top, rows[k * 2 * head_dim + head_dim + d]);
    float total = 0.0f, acc = 0.0f;
    for (int64_t k = 0; k < ratio; ++k) {
      const float e = std::exp(rows[k * 2 * head_dim + head_dim + d] - top);
      total += e;
      acc += e * rows[k * 2 * head_dim + d];
    }
    pooled[d] = acc / total;  // Σ_k (e_k / total)·u_k with one division
  }
  return pooled;
}

}  // namespace

Status op_compress(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "ratio", 1, 1 << 16));
  DSV41_TRY(check_constant(ctx, "head_dim", 1, 1 << 20));
  DSV41_TRY(check_constant(ctx, "index_head_dim", 1, 1 << 20));
  DSV41_TRY(check_constant(ctx, "rope_dim", 0, std::min(ctx.constant("head_dim"), ctx.constant("index_head_dim"))));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  CompressShape c;
  c.ratio = ctx.constant("ratio");
  c.head_dim = ctx.constant("head_dim");
  c.index_dim = ctx.constant("index_head_dim");
  c.eps = static_cast<float>(ctx.real("eps"));
  const int64_t rows = st.rows, dh = c.head_dim;
  const bool pooled = c.ratio >= 2;
  DSV41_TRY(check_presence(ctx, "gate", pooled, "present iff ratio >= 2"));
  DSV41_TRY(check_presence(ctx, "tail", pooled, "present iff ratio >= 2"));
  DSV41_ASSIGN_OR_RETURN(c.freqs, rope_from_args(ctx, ctx.constant("rope_dim")));
  DSV41_ASSIGN_OR_RETURN(TensorView raw, scratch_arg(ctx, "raw", Want::F32, rows * dh));
  TensorView gate;
  if (pooled) {
    DSV41_ASSIGN_OR_RETURN(gate, scratch_arg(ctx, "gate", Want::F32, rows * dh));
  }
  DSV41_ASSIGN_OR_RETURN(c.norm, weight_arg(ctx, "norm", dh));
  DSV41_ASSIGN_OR_RETURN(c.wk, weight_arg(ctx, "wk", c.index_dim * dh));
  DSV41_ASSIGN_OR_RETURN(c.k_norm, weight_arg(ctx, "k_norm", c.index_dim));

  std::vector<float> latent(static_cast<size_t>(dh)), pair(static_cast<size_t>(2 * dh));
  // Row order matters: a row may close a group whose earlier rows came from this step or an earlier one.
  for (int64_t r = 0; r < rows; ++r) {
    if (!st.active(r)) continue;
    const int slot = st.slot(r);
    const int64_t p = st.position(r);
    DSV41_ASSIGN_OR_RETURN(CacheRows cache, cache_rows_arg(ctx, "cache", slot, CacheRole::Compressed, dh));
    DSV41_ASSIGN_OR_RETURN(CacheRows index_cache,
                           cache_rows_arg(ctx, "index_cache", slot, CacheRole::IndexKey, c.index_dim));
    if (cache.packed != index_cache.packed)
      return Status::errorf("op compress: cache is {} but index_cache is {}; one cache format serves both",
                            cache.packed ? "packed" : "activations", index_cache.packed ? "packed" : "activations");
    if (!cache.packed) DSV41_TRY(check_same_dtype(ctx, "cache", cache.view, "index_cache", index_cache.view));
    // The latent is an RMSNorm output (§2 row 3), rounded when activations are bf16. Packed caches
    // have no activation dtype of their own: they take the served rounding (docs/model.md "Cache formats").
    const bool round = cache.packed || rounds(cache.view);
    if (!pooled) {
      read_floats(raw, r * dh, dh, latent.data());
      rms_norm(latent.data(), c.norm, dh, c.eps, round, latent.data());
      DSV41_TRY(write_entry(c, cache, index_cache, round, slot, r, p, latent, p));
      continue;
    }
    DSV41_ASSIGN_OR_RETURN(TensorView tail, state_ring_arg(ctx, "tail", slot, Want::F32, 2 * dh, c.ratio));
    read_floats(raw, r * dh, dh, pair.data());
    read_floats(gate, r * dh, dh, pair.data() + dh);
    write_floats(tail, (p % (tail.numel() / (2 * dh))) * 2 * dh, 2 * dh, pair.data());
    if (p % c.ratio != c.ratio - 1) continue;
    latent = pool(tail, p - (c.ratio - 1), c.ratio, dh);
    rms_norm(latent.data(), c.norm, dh, c.eps, round, latent.data());
    DSV41_TRY(write_entry(c, cache, index_cache, round, slot, r, p, latent, p / c.ratio));
  }
  return Status::ok();
}

}  // namespace dsv41::cpu
