// runtime/cpu/ops_engram.cpp — the Engram ops (docs/ops.md "Engram"): hash with the slot's lookback, lookback store, row gather, gate.
#include <vector>

#include <fmt/format.h>

#include "common/engram_hash.h"
#include "runtime/cpu/engram_math.h"
#include "runtime/cpu/ops.h"

namespace dsv41::cpu {

Status op_engram_hash(const OpContext& ctx) {
  DSV41_TRY(check_statics(ctx));
  DSV41_ASSIGN_OR_RETURN(const EngramHashCall hash, engram_hash_call(ctx.call()));
  const StaticsView& st = ctx.statics();
  const int64_t max_n = hash.max_n, window = hash.window, width = hash.width();
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::I32, st.rows * width));
  std::vector<int64_t> before(static_cast<size_t>(max_n - 1)), ids(static_cast<size_t>(width));
  for (int64_t r = 0; r < st.rows; ++r) {
    if (!st.active(r)) {
      for (int64_t k = 0; k < width; ++k) out.set_int(r * width + k, 0);
      continue;
    }
    DSV41_ASSIGN_OR_RETURN(TensorView ring, state_arg(ctx, "lookback", st.slot(r), Want::I32, window));
    const int64_t p = st.position(r), first = st.first_row(r);
    if (first < 0 || first > r || st.position(first) > p)
      return Status::errorf("op engram_hash: row {} position {}: first row {} is not an earlier row of its sequence", r,
                            p, first);
    const int64_t p0 = st.position(first);
    // The max_n − 1 tokens before p, oldest first: from this step's rows, else from the slot's ring;
    // −1 before the sequence start (engram_rows blocks from there on).
    for (int64_t k = 0; k < max_n - 1; ++k) {
      const int64_t q = p - (max_n - 1) + k;
      before[k] = q < 0 ? -1 : q >= p0 ? st.token(r - (p - q)) : ring.get_int(q % window);
    }
    DSV41_TRY(engram_position_rows(hash, before, st.token(r), r, p, ids));
    for (int64_t k = 0; k < width; ++k) out.set_int(r * width + k, static_cast<int32_t>(ids[k]));
  }
  return Status::ok();
}

Status op_engram_lookback(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "window", 1, 1 << 24));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t window = ctx.constant("window");
  for (int64_t r = 0; r < st.rows; ++r) {  // in row order: a later position overwrites an earlier one
    if (!st.active(r)) continue;
    DSV41_ASSIGN_OR_RETURN(TensorView ring, state_arg(ctx, "lookback", st.slot(r), Want::I32, window));
    ring.set_int(st.position(r) % window, st.token(r));
  }
  return Status::ok();
}

Status op_engram_gather(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "columns", 1, 1 << 16));
  DSV41_TRY(check_constant(ctx, "head_dim", kScaleBlock, 1 << 16));
  DSV41_TRY(check_constant(ctx, "row_width", ctx.constant("columns"), 1 << 16));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t columns = ctx.constant("columns"), dim = ctx.constant("head_dim"), row_width = ctx.constant("row_width");
  const int64_t first = ctx.integer("first_column"), layer = ctx.integer("layer");
  if (first < 0 || first + columns > row_width)
    return Status::errorf("op engram_gather: columns [{}, {}) outside the {} hashed columns", first, first + columns,
                          row_width);
  DSV41_ASSIGN_OR_RETURN(TensorView ids, scratch_arg(ctx, "ids", Want::I32, st.rows * row_width));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::Act, st.rows * columns * dim));
  const HostTableView t = ctx.host_table("table");
  if (!t.codes || t.dim != dim)
    return Status::errorf("op engram_gather: layer {}: table {} is not a mapped host table of rows of {} values "
                          "(mapped: {}, row width {})",
                          layer, t.name.empty() ? "(none)" : t.name, dim, t.codes != nullptr, t.dim);
  const EngramTable table{t.codes, t.scales, t.rows, t.dim, layer};
  std::vector<int64_t> row_ids(static_cast<size_t>(columns));
  std::vector<float> values(static_cast<size_t>(columns * dim));
  return for_active_rows(st, {{&out, columns * dim}}, [&](int64_t r) -> Status {
    for (int64_t c = 0; c < columns; ++c) row_ids[c] = ids.get_int(r * row_width + first + c);
    DSV41_TRY(engram_fetch_rows(table, row_ids, columns, values.data())
                  .with_context(fmt::format("op engram_gather: row {} (position {})", r, st.position(r))));
    write_floats(out, r * columns * dim, columns * dim, values.data());
    return Status::ok();
  });
}

Status op_engram_gate(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "hidden", 1, 1 << 20));
  DSV41_TRY(check_constant(ctx, "streams", 1, 64));
  const StaticsView& st = ctx.statics();
  const int64_t d = ctx.constant("hidden"), s = ctx.constant("streams"), rows = st.rows;
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::Act, rows * s * d));
  DSV41_ASSIGN_OR_RETURN(TensorView kv, scratch_arg(ctx, "kv", Want::F32, rows * (s + 1) * d));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::Act, rows * s * d));
  DSV41_TRY(check_same_dtype(ctx, "x", x, "out", out));
  DSV41_ASSIGN_OR_RETURN(const float* q, weight_arg(ctx, "q_weight", s * d));
  DSV41_ASSIGN_OR_RETURN(const float* k, weight_arg(ctx, "k_weight", s * d));
  const auto eps = static_cast<float>(ctx.real("eps"));
  std::vector<float> h(static_cast<size_t>(s * d)), row_kv(static_cast<size_t>((s + 1) * d));
  for (int64_t r = 0; r < rows; ++r) {
    if (!st.active(r)) continue;  // its streams are zeros from embed; nothing to gate
    read_floats(x, r * s * d, s * d, h.data());
    read_floats(kv, r * (s + 1) * d, (s + 1) * d, row_kv.data());
    engram_gate(h.data(), s, d, row_kv.data(), q, k, eps, rounds(out));
    write_floats(out, r * s * d, s * d, h.data());
  }
  return Status::ok();
}

}  // namespace dsv41::cpu
