// runtime/cpu/ops_draft.cpp — the DSpark ops (docs/ops.md "DSpark"): the target's tap of its streams, the draft blocks' attention over context and block, the Markov head.
#include <algorithm>

#include "runtime/cpu/ops.h"
#include "runtime/cpu/ops_draft.h"
#include "runtime/generate.h"

namespace dsv41::cpu {

Status op_stream_mean(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "hidden", 1, 1 << 20));
  DSV41_TRY(check_constant(ctx, "streams", 1, 64));
  DSV41_TRY(check_constant(ctx, "taps", 1, 64));
  const int64_t d = ctx.constant("hidden"), s = ctx.constant("streams"), taps = ctx.constant("taps");
  const int64_t tap = ctx.integer("tap");
  if (tap < 0 || tap >= taps) return Status::errorf("op stream_mean: tap {} outside 0..{}", tap, taps - 1);
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t rows = st.rows;
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::Act, rows * s * d));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::Act, rows * taps * d));
  DSV41_TRY(check_same_dtype(ctx, "x", x, "out", out));
  std::vector<float> streams(static_cast<size_t>(s * d)), mean(static_cast<size_t>(d));
  for (int64_t r = 0; r < rows; ++r) {
    if (!st.active(r)) {  // only this tap's columns are this call's
      write_zeros(out, (r * taps + tap) * d, d);
      continue;
    }
    read_floats(x, r * s * d, s * d, streams.data());
    for (int64_t i = 0; i < d; ++i) {
      float sum = 0.0f;
      for (int64_t k = 0; k < s; ++k) sum += streams[k * d + i];
      mean[i] = sum / static_cast<float>(s);
    }
    write_floats(out, (r * taps + tap) * d, d, mean.data());  // rounded when the activations are BF16
  }
  return Status::ok();
}

Status op_block_attention(const OpContext& ctx) {
  DSV41_ASSIGN_OR_RETURN(const AttentionArgs a, attention_args(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t heads = a.heads, dh = a.dh, window = a.window, rows = st.rows;
  const TensorView &q = a.q, &kv = a.kv, &out = a.out;

  std::vector<float> keys, qr(static_cast<size_t>(heads * dh)), o(static_cast<size_t>(heads * dh));
  return for_active_rows(st, {{&out, heads * dh}}, [&](int64_t r) -> Status {
    const int slot = st.slot(r);
    const int64_t first = st.first_row(r);
    if (first < 0 || first > r || st.slot(first) != slot || st.position(r) - st.position(first) != r - first)
      return Status::errorf("op block_attention: row {} (slot {}, position {}) names first row {}, which does not "
                            "start its run of consecutive positions", r, slot, st.position(r), first);
    const int64_t p0 = st.position(first);
    int64_t last = r;  // the block: every row of this sequence in the step, later rows included
    while (last + 1 < rows && st.active(last + 1) && st.first_row(last + 1) == first) ++last;

    // Keys: the context rows of the window before the block, oldest first, then the block's rows.
    keys.clear();
    auto append = [&](const TensorView& view, int64_t row) {
      keys.resize(keys.size() + static_cast<size_t>(dh));
      read_floats(view, row * dh, dh, keys.data() + keys.size() - dh);
    };
    if (p0 > 0) {
      DSV41_ASSIGN_OR_RETURN(TensorView ring, state_ring_arg(ctx, "ring", slot, Want::Act, dh, window));
      DSV41_TRY(check_same_dtype(ctx, "kv", kv, "ring", ring));
      const int64_t ring_rows = ring.numel() / dh;
      for (int64_t t = std::max<int64_t>(0, p0 - window); t < p0; ++t) append(ring, t % ring_rows);
    }
    for (int64_t b = first; b <= last; ++b) append(kv, b);
    read_floats(q, r * heads * dh, heads * dh, qr.data());
    attend(qr.data(), keys.data(), static_cast<int64_t>(keys.size()) / dh, heads, dh, a.sink, a.scale, o.data());
    write_floats(out, r * heads * dh, heads * dh, o.data());
    return Status::ok();
  });
}

namespace {

// Row r's index in its run (rows first(r) .. r, all active and naming first(r)), or -1 when the statics
// do not make r part of one.
int64_t run_index(const StaticsView& st, int64_t r) {
  const int64_t f = st.first_row(r);
  if (f < 0 || f > r) return -1;
  for (int64_t q = f; q <= r; ++q)
    if (!st.active(q) || st.first_row(q) != f) return -1;
  return r - f;
}

Result<int64_t> markov_step(const OpContext& ctx) {
  const int64_t step = ctx.integer("step");
  if (step < 0) return Status::errorf("op {}: step {} is negative", ctx.call().op, step);
  return step;
}

}  // namespace

// One draft row of every sequence (its row `step`): rows at other steps are left as they are, so the
// phase calls it once a step, with markov_pick between (docs/ops.md "DSpark").
Status op_markov_logits(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "vocab", 1, 1 << 24));
  DSV41_TRY(check_constant(ctx, "rank", 1, 1 << 16));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t vocab = ctx.constant("vocab"), rank = ctx.constant("rank"), rows = st.rows;
  DSV41_ASSIGN_OR_RETURN(const int64_t step, markov_step(ctx));
  DSV41_ASSIGN_OR_RETURN(TensorView base, scratch_arg(ctx, "base", Want::F32, rows * vocab));
  DSV41_ASSIGN_OR_RETURN(const float* embed, weight_arg(ctx, "embed", vocab * rank));
  DSV41_ASSIGN_OR_RETURN(const float* head, weight_arg(ctx, "head", vocab * rank));
  DSV41_ASSIGN_OR_RETURN(TensorView picks, scratch_arg(ctx, "picks", Want::I32, rows));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::F32, rows * vocab));
  std::vector<float> logits(static_cast<size_t>(vocab)), markov(static_cast<size_t>(vocab));
  for (int64_t r = 0; r < rows; ++r) {
    if (!st.active(r)) {
      write_zeros(out, r * vocab, vocab);
      continue;
    }
    const int64_t index = run_index(st, r);
    if (index < 0)
      return Status::errorf("op markov_logits: row {} names first row {}, but the rows from it to row {} are not one "
                            "sequence's run", r, st.first_row(r), r);
    if (index != step) continue;
    // The bonus token precedes the first draft; then the previous row's pick (markov_pick).
    const int32_t prev = index == 0 ? st.token(r) : picks.get_int(r - 1);
    if (prev < 0 || prev >= vocab)
      return Status::errorf("op markov_logits: row {} follows token {}, outside the vocabulary 0..{}", r, prev, vocab - 1);
    matvec(head, embed + prev * rank, vocab, rank, markov.data());
    read_floats(base, r * vocab, vocab, logits.data());
    for (int64_t v = 0; v < vocab; ++v) logits[v] += markov[v];
    write_floats(out, r * vocab, vocab, logits.data());
  }
  return Status::ok();
}

Status op_markov_pick(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "vocab", 1, 1 << 24));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t vocab = ctx.constant("vocab"), rows = st.rows;
  DSV41_ASSIGN_OR_RETURN(const int64_t step, markov_step(ctx));
  DSV41_ASSIGN_OR_RETURN(TensorView logits, scratch_arg(ctx, "logits", Want::F32, rows * vocab));
  DSV41_ASSIGN_OR_RETURN(TensorView picks, scratch_arg(ctx, "picks", Want::I32, rows));
  std::vector<float> row(static_cast<size_t>(vocab));
  for (int64_t r = 0; r < rows; ++r) {
    if (!st.active(r) || run_index(st, r) != step) continue;
    read_floats(logits, r * vocab, vocab, row.data());
    picks.set_int(r, greedy_token(row.data(), vocab));  // runtime/generate.h: ties to the lower id, NaN never wins
  }
  return Status::ok();
}

}  // namespace dsv41::cpu
