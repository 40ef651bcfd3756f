// runtime/cpu/ops_attention.cpp — sparse attention over window rows and selected compressed rows (docs/model.md §6.4), and the window ring store.
#include <algorithm>
#include <cmath>

#include "runtime/cpu/cache_rows.h"
#include "runtime/cpu/ops.h"
#include "runtime/cpu/ops_draft.h"

namespace dsv41::cpu {

Result<AttentionArgs> attention_args(const OpContext& ctx, bool q_before_rope) {
  DSV41_TRY(check_constant(ctx, "heads", 1, 1 << 16));
  DSV41_TRY(check_constant(ctx, "head_dim", 1, 1 << 20));
  DSV41_TRY(check_constant(ctx, "window", 1, 1 << 24));
  DSV41_TRY(check_statics(ctx));
  AttentionArgs a;
  a.heads = ctx.constant("heads"), a.dh = ctx.constant("head_dim"), a.window = ctx.constant("window");
  const int64_t rows = ctx.statics().rows;
  DSV41_ASSIGN_OR_RETURN(a.q, scratch_arg(ctx, "q", q_before_rope ? Want::Act : Want::F32, rows * a.heads * a.dh));
  DSV41_ASSIGN_OR_RETURN(a.kv, scratch_arg(ctx, "kv", Want::Act, rows * a.dh));
  DSV41_ASSIGN_OR_RETURN(a.sink, weight_arg(ctx, "sink", a.heads));
  DSV41_ASSIGN_OR_RETURN(a.out, scratch_arg(ctx, "out", Want::Act, rows * a.heads * a.dh));
  DSV41_TRY(check_same_dtype(ctx, "kv", a.kv, "out", a.out));
  if (q_before_rope) DSV41_TRY(check_same_dtype(ctx, "kv", a.kv, "q", a.q));
  a.scale = static_cast<float>(ctx.real("scale"));
  return a;
}

Status op_sparse_attention(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "topk", 0, 1 << 24));
  const int64_t topk = ctx.constant("topk");
  DSV41_TRY(check_presence(ctx, "cache", topk > 0, "present iff topk > 0"));
  DSV41_TRY(check_presence(ctx, "selected", topk > 0, "present iff topk > 0"));
  DSV41_ASSIGN_OR_RETURN(const AttentionArgs a, attention_args(ctx, true));
  DSV41_TRY(check_constant(ctx, "rope_dim", 0, a.dh));
  DSV41_ASSIGN_OR_RETURN(const std::vector<double> freqs, rope_from_args(ctx, ctx.constant("rope_dim")));
  const StaticsView& st = ctx.statics();
  const int64_t heads = a.heads, dh = a.dh, window = a.window, rows = st.rows;
  const TensorView &q = a.q, &kv = a.kv, &out = a.out;
  const float* sink = a.sink;
  const float scale = a.scale;
  TensorView selected;
  if (topk > 0) {
    DSV41_ASSIGN_OR_RETURN(selected, scratch_arg(ctx, "selected", Want::I32, rows * topk));
  }

  // With an official (packed) ring, this step's rows are read as the ring will hold them: rounded
  // through FP8 as the official code rounds kv in place before attending.
  const bool packed_window = ctx.state("ring", 0).dtype == kPackedCacheDType;
  std::vector<float> keys, qr(static_cast<size_t>(heads * dh)), o(static_cast<size_t>(heads * dh));
  return for_active_rows(st, {{&out, heads * dh}}, [&](int64_t r) -> Status {
    const int slot = st.slot(r);
    const int64_t p = st.position(r), first = st.first_row(r);
    if (first < 0 || first > r || st.slot(first) != slot || p - st.position(first) != r - first)
      return Status::errorf("op sparse_attention: row {} (slot {}, position {}) names first row {}, which does not "
                            "start its run of consecutive positions", r, slot, p, first);
    const int64_t p0 = st.position(first);

    // Key rows, oldest window position first, then the selected compressed rows in the listed order.
    keys.clear();
    auto append = [&](const TensorView& view, int64_t row) {
      keys.resize(keys.size() + static_cast<size_t>(dh));
      read_floats(view, row * dh, dh, keys.data() + keys.size() - dh);
    };
    auto append_cached = [&](const CacheRows& cache, int64_t row) {
      keys.resize(keys.size() + static_cast<size_t>(dh));
      cache.read(row, keys.data() + keys.size() - dh);
    };
    CacheRows ring;
    for (int64_t t = std::max<int64_t>(0, p - window + 1); t <= p; ++t) {
      if (t >= p0) {
        append(kv, first + (t - p0));  // a row of this step
        if (packed_window) round_cache_row(CacheRole::Window, keys.data() + keys.size() - dh, dh, keys.data() + keys.size() - dh);
        continue;
      }
      if (ring.view.data == nullptr) {
        DSV41_ASSIGN_OR_RETURN(ring, cache_rows_arg(ctx, "ring", slot, CacheRole::Window, dh, window));
        if (!ring.packed) DSV41_TRY(check_same_dtype(ctx, "kv", kv, "ring", ring.view));
      }
      append_cached(ring, t % ring.rows());
    }
    if (topk > 0) {
      DSV41_ASSIGN_OR_RETURN(CacheRows cache, cache_rows_arg(ctx, "cache", slot, CacheRole::Compressed, dh));
      if (!cache.packed) DSV41_TRY(check_same_dtype(ctx, "kv", kv, "cache", cache.view));
      for (int64_t k = 0; k < topk; ++k) {
        const int32_t s = selected.get_int(r * topk + k);
        if (s == -1) continue;
        if (s < 0 || s >= cache.rows())
          return Status::errorf("op sparse_attention: row {} selects entry {}, but slot {} holds {} entries", r, s,
                                slot, cache.rows());
        append_cached(cache, s);
      }
    }
    const auto count = static_cast<int64_t>(keys.size()) / dh;

    read_floats(q, r * heads * dh, heads * dh, qr.data());
    for (int64_t h = 0; h < heads; ++h) rope_rotate(qr.data() + h * dh, dh, freqs, p, false);  // the rope op's, F32 out
    attend(qr.data(), keys.data(), count, heads, dh, sink, scale, o.data());
    // The inverse rope of every head (undoing V's rotation) after the output's rounding: what the rope
    // op did to the stored output before it was folded in here.
    for (int64_t h = 0; h < heads; ++h) {
      float* oh = o.data() + h * dh;
      for (int64_t d = 0; d < dh; ++d) oh[d] = round_if(rounds(out), oh[d]);
      rope_rotate(oh, dh, freqs, p, true);
    }
    write_floats(out, r * heads * dh, heads * dh, o.data());
    return Status::ok();
  });
}

void attend(const float* q, const float* keys, int64_t count, int64_t heads, int64_t dh, const float* sink, float scale,
            float* out) {
  std::vector<float> logit(static_cast<size_t>(count));
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * dh;
    float top = sink[h];
    for (int64_t j = 0; j < count; ++j) top = std::max(top, logit[j] = dot(qh, keys + j * dh, dh) * scale);
    float denominator = std::exp(sink[h] - top);  // the sink counts in the denominator only
    float* oh = out + h * dh;
    std::fill(oh, oh + dh, 0.0f);
    for (int64_t j = 0; j < count; ++j) {
      const float e = std::exp(logit[j] - top);
      denominator += e;
      const float* key = keys + j * dh;
      for (int64_t d = 0; d < dh; ++d) oh[d] += e * key[d];
    }
    for (int64_t d = 0; d < dh; ++d) oh[d] /= denominator;  // rounded by the BF16 store
  }
}

Status op_window_store(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "window", 1, 1 << 24));
  DSV41_TRY(check_constant(ctx, "head_dim", 1, 1 << 20));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t window = ctx.constant("window"), dh = ctx.constant("head_dim"), rows = st.rows;
  DSV41_ASSIGN_OR_RETURN(TensorView kv, scratch_arg(ctx, "kv", Want::Act, rows * dh));
  std::vector<float> row(static_cast<size_t>(dh));
  for (int64_t r = 0; r < rows; ++r) {  // in row order: a later position overwrites an earlier one
    if (!st.active(r)) continue;
    DSV41_ASSIGN_OR_RETURN(CacheRows ring, cache_rows_arg(ctx, "ring", st.slot(r), CacheRole::Window, dh, window));
    if (!ring.packed) DSV41_TRY(check_same_dtype(ctx, "kv", kv, "ring", ring.view));
    read_floats(kv, r * dh, dh, row.data());
    ring.write(st.position(r) % ring.rows(), row.data());
  }
  return Status::ok();
}

}  // namespace dsv41::cpu
