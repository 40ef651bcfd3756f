// runtime/cpu/ops_indexer.cpp — index_select (docs/model.md §6.3): indexer scores, candidate blocks, masked top-k.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/cache_rows.h"
#include "runtime/cpu/ops.h"

namespace dsv41::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

enum Mode : int64_t { kPlain = 0, kCandidateSource = 1, kMasked = 2 };

// The index keys of one slot as fp32, converted only as far as a row needs them.
struct KeyRows {
  int slot = -1;
  int64_t converted = 0;
  std::vector<float> values;
  void ensure(const CacheRows& cache, int for_slot, int64_t n, int64_t width) {
    if (for_slot != slot) {
      slot = for_slot;
      converted = 0;
      values.clear();
    }
    if (n <= converted) return;
    values.resize(static_cast<size_t>(n * width));
    for (int64_t s = converted; s < n; ++s) cache.read(s, values.data() + s * width);
    converted = n;
  }
};

// The best `count` of `ids` by higher score, then lower id (NaN scores were made −∞ before).
void keep_best(std::vector<int64_t>& ids, const std::vector<float>& score, int64_t count) {
  count = std::min<int64_t>(count, static_cast<int64_t>(ids.size()));
  std::partial_sort(ids.begin(), ids.begin() + count, ids.end(), [&](int64_t a, int64_t b) {
    return score[a] > score[b] || (score[a] == score[b] && a < b);
  });
  ids.resize(static_cast<size_t>(count));
}

}  // namespace

Status op_index_select(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "index_heads", 1, 1 << 16));
  DSV41_TRY(check_constant(ctx, "index_head_dim", 1, 1 << 20));
  DSV41_TRY(check_constant(ctx, "ratio", 1, 1 << 16));
  DSV41_TRY(check_constant(ctx, "topk", 0, 1 << 24));
  DSV41_TRY(check_constant(ctx, "mode", kPlain, kMasked));
  const int64_t mode = ctx.constant("mode");
  if (mode != kPlain) {
    DSV41_TRY(check_constant(ctx, "cand_blocks", 1, 1 << 24));
    DSV41_TRY(check_constant(ctx, "cand_block_size", 1, 1 << 24));
  }
  DSV41_TRY(check_presence(ctx, "candidates", mode != kPlain, "present iff mode is 1 or 2"));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t heads = ctx.constant("index_heads"), width = ctx.constant("index_head_dim");
  const int64_t ratio = ctx.constant("ratio"), topk = ctx.constant("topk"), rows = st.rows;
  const int64_t cand_blocks = ctx.constant("cand_blocks"), block = ctx.constant("cand_block_size");
  DSV41_ASSIGN_OR_RETURN(TensorView iq, scratch_arg(ctx, "iq", Want::F32, rows * heads * width));
  DSV41_ASSIGN_OR_RETURN(TensorView iw, scratch_arg(ctx, "iw", Want::F32, rows * heads));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::I32, rows * topk));
  TensorView candidates;
  if (mode != kPlain) {
    DSV41_ASSIGN_OR_RETURN(candidates, scratch_arg(ctx, "candidates", Want::I32, rows * cand_blocks));
  }
  const float factor_dim = static_cast<float>(1.0 / std::sqrt(static_cast<double>(width)));
  const float factor_heads = static_cast<float>(1.0 / std::sqrt(static_cast<double>(heads)));

  KeyRows keys;
  std::vector<float> q(static_cast<size_t>(heads * width)), w(static_cast<size_t>(heads)), score;
  std::vector<int64_t> order;
  return for_active_rows(st, {{&out, topk}, {&candidates, mode == kCandidateSource ? cand_blocks : 0}}, [&](int64_t r) -> Status {
    const int slot = st.slot(r);
    const int64_t p = st.position(r), n = (p + 1) / ratio;
    DSV41_ASSIGN_OR_RETURN(CacheRows cache, cache_rows_arg(ctx, "index_cache", slot, CacheRole::IndexKey, width));
    if (n > cache.rows())
      return Status::errorf("op index_select: row {} at position {} sees {} entries, but slot {} holds {}", r, p, n,
                            slot, cache.rows());
    keys.ensure(cache, slot, n, width);
    read_floats(iq, r * heads * width, heads * width, q.data());
    read_floats(iw, r * heads, heads, w.data());
    for (float& v : w) v = v * factor_dim * factor_heads;

    score.assign(static_cast<size_t>(n), 0.0f);
    for (int64_t s = 0; s < n; ++s) {
      const float* key = keys.values.data() + s * width;
      for (int64_t h = 0; h < heads; ++h) score[s] += w[h] * std::max(0.0f, dot(q.data() + h * width, key, width));
      if (std::isnan(score[s])) score[s] = -kInf;  // keeps the orderings total; such an entry is never chosen
    }

    if (mode == kCandidateSource) {
      const int64_t nb = (n + block - 1) / block;
      std::vector<float> best(static_cast<size_t>(nb), -kInf);
      for (int64_t s = 0; s < n; ++s) best[s / block] = std::max(best[s / block], score[s]);
      if (nb > 0) best[nb - 1] = kInf;  // the newest block is always kept
      order.resize(static_cast<size_t>(nb));
      for (int64_t b = 0; b < nb; ++b) order[b] = b;
      keep_best(order, best, cand_blocks);
      std::sort(order.begin(), order.end());
      for (int64_t c = 0; c < cand_blocks; ++c)
        candidates.set_int(r * cand_blocks + c, c < static_cast<int64_t>(order.size()) ? static_cast<int32_t>(order[c]) : -1);
    } else if (mode == kMasked) {
      std::vector<bool> kept(static_cast<size_t>((n + block - 1) / block), false);
      for (int64_t c = 0; c < cand_blocks; ++c) {
        const int32_t b = candidates.get_int(r * cand_blocks + c);
        if (b < -1) return Status::errorf("op index_select: row {} lists candidate block {}", r, b);
        if (b >= 0 && b < static_cast<int64_t>(kept.size())) kept[b] = true;
      }
      for (int64_t s = 0; s < n; ++s)
        if (!kept[s / block]) score[s] = -kInf;
    }

    order.resize(static_cast<size_t>(n));
    for (int64_t s = 0; s < n; ++s) order[s] = s;
    keep_best(order, score, topk);
    std::erase_if(order, [&](int64_t s) { return score[s] == -kInf; });
    std::sort(order.begin(), order.end());
    for (int64_t k = 0; k < topk; ++k)
      out.set_int(r * topk + k, k < static_cast<int64_t>(order.size()) ? static_cast<int32_t>(order[k]) : -1);
    return Status::ok();
  });
}

}  // namespace dsv41::cpu
