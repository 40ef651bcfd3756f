// runtime/cpu/ops_moe.cpp — the MoE (docs/model.md §7): sqrt-softplus router, routed experts, shared expert.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/cpu/ops.h"

namespace dsv41::cpu {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 24;
constexpr size_t kRowBlock = 32;

// One SwiGLU expert over the listed rows, each with its own weight, added into y [rows, D]:
// y[r] += b(w_r·silu(min(g, L))·clamp(u, −L, L))·w2ᵀ with g = x·w1ᵀ, u = x·w3ᵀ (no clamp if L = 0).
void add_expert(const std::vector<float>& x, int64_t d_count, int64_t f_count, const float* w1, const float* w3,
                const float* w2, float limit, bool round, const std::vector<int64_t>& rows, const std::vector<float>& weight,
                std::vector<float>& y) {
  std::vector<float> act(kRowBlock * static_cast<size_t>(f_count));
  const float* in[4];
  float g[4], u[4], down[4];
  for (size_t b = 0; b < rows.size(); b += kRowBlock) {
    const size_t end = std::min(rows.size(), b + kRowBlock);
    for (int64_t f = 0; f < f_count; ++f)
      for (size_t i = b; i < end; i += 4) {
        const int count = static_cast<int>(std::min<size_t>(4, end - i));
        for (int k = 0; k < count; ++k) in[k] = x.data() + rows[i + k] * d_count;
        dot_rows(w1 + f * d_count, in, count, d_count, g);
        dot_rows(w3 + f * d_count, in, count, d_count, u);
        for (int k = 0; k < count; ++k) {
          if (limit > 0.0f) {
            g[k] = std::min(g[k], limit);
            u[k] = std::clamp(u[k], -limit, limit);
          }
          act[(i + k - b) * f_count + f] = round_if(round, weight[i + k] * silu(g[k]) * u[k]);
        }
      }
    for (int64_t d = 0; d < d_count; ++d)
      for (size_t i = b; i < end; i += 4) {
        const int count = static_cast<int>(std::min<size_t>(4, end - i));
        for (int k = 0; k < count; ++k) in[k] = act.data() + (i + k - b) * f_count;
        dot_rows(w2 + d * f_count, in, count, f_count, down);
        for (int k = 0; k < count; ++k) y[rows[i + k] * d_count + d] += down[k];
      }
  }
}

Result<float> limit_arg(const OpContext& ctx) {
  const double limit = ctx.real("limit");
  if (!(limit >= 0.0)) return Status::errorf("op {}: limit is {}, expected >= 0 (0: no clamp)", ctx.call().op, limit);
  return static_cast<float>(limit);
}

// The shared expert (weights prefix + w1, w3, w2) added onto y's active rows, as op shared_expert.
Status add_shared_expert(const OpContext& ctx, const std::string& prefix, const std::vector<float>& xf, bool round,
                         std::vector<float>& y) {
  const StaticsView& st = ctx.statics();
  const int64_t d_count = ctx.constant("hidden"), f_count = ctx.constant("width"), rows = st.rows;
  DSV41_ASSIGN_OR_RETURN(const float* w1, weight_arg(ctx, prefix + "w1", f_count * d_count));
  DSV41_ASSIGN_OR_RETURN(const float* w3, weight_arg(ctx, prefix + "w3", f_count * d_count));
  DSV41_ASSIGN_OR_RETURN(const float* w2, weight_arg(ctx, prefix + "w2", d_count * f_count));
  DSV41_ASSIGN_OR_RETURN(const float limit, limit_arg(ctx));
  std::vector<int64_t> active;
  for (int64_t r = 0; r < rows; ++r)
    if (st.active(r)) active.push_back(r);
  add_expert(xf, d_count, f_count, w1, w3, w2, limit, round, active, std::vector<float>(active.size(), 1.0f), y);
  return Status::ok();
}

}  // namespace

Status op_router(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "hidden", 1, kMaxDim));
  DSV41_TRY(check_constant(ctx, "experts", 1, kMaxDim));
  DSV41_TRY(check_constant(ctx, "topk", 1, ctx.constant("experts")));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t d_count = ctx.constant("hidden"), experts = ctx.constant("experts"), topk = ctx.constant("topk");
  const int64_t rows = st.rows;
  const int64_t normalize = ctx.integer("normalize");
  if (normalize != 0 && normalize != 1) return Status::errorf("op router: normalize is {}, expected 0 or 1", normalize);
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::Act, rows * d_count));
  DSV41_ASSIGN_OR_RETURN(const float* gate, weight_arg(ctx, "gate", experts * d_count));
  DSV41_ASSIGN_OR_RETURN(const float* bias, weight_arg(ctx, "bias", experts));
  DSV41_ASSIGN_OR_RETURN(TensorView ids, scratch_arg(ctx, "ids", Want::I32, rows * topk));
  DSV41_ASSIGN_OR_RETURN(TensorView weights, scratch_arg(ctx, "weights", Want::F32, rows * topk));
  const auto scaling = static_cast<float>(ctx.real("scaling"));

  std::vector<float> xr(static_cast<size_t>(d_count)), score(static_cast<size_t>(experts));
  std::vector<float> biased(static_cast<size_t>(experts));
  std::vector<int64_t> order(static_cast<size_t>(experts));
  return for_active_rows(st, {{&ids, topk}, {&weights, topk}}, [&](int64_t r) -> Status {
    read_floats(x, r * d_count, d_count, xr.data());
    matvec(gate, xr.data(), experts, d_count, score.data());
    for (int64_t e = 0; e < experts; ++e) {
      score[e] = std::sqrt(softplus(score[e]));
      biased[e] = score[e] + bias[e];
      if (std::isnan(biased[e])) biased[e] = -std::numeric_limits<float>::infinity();  // keeps the order total
    }
    std::iota(order.begin(), order.end(), int64_t{0});
    // Higher score + bias first, ties to the lower expert id; the bias only chooses.
    std::partial_sort(order.begin(), order.begin() + topk, order.end(), [&](int64_t a, int64_t b) {
      return biased[a] > biased[b] || (biased[a] == biased[b] && a < b);
    });
    float total = 0.0f;
    for (int64_t k = 0; k < topk; ++k) total += score[order[k]];
    // As the official gate: a single chosen expert keeps its raw score (no renormalisation to 1).
    const bool renormalise = normalize != 0 && topk > 1;
    for (int64_t k = 0; k < topk; ++k) {
      float w = score[order[k]];
      if (renormalise) w /= total + 1e-20f;
      ids.set_int(r * topk + k, static_cast<int32_t>(order[k]));
      weights.set(r * topk + k, w * scaling);
    }
    return Status::ok();
  });
}

Status op_moe_experts(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "hidden", 1, kMaxDim));
  DSV41_TRY(check_constant(ctx, "width", 0, kMaxDim));  // a rank may hold no expert columns
  DSV41_TRY(check_constant(ctx, "experts", 1, kMaxDim));
  DSV41_TRY(check_constant(ctx, "topk", 1, ctx.constant("experts")));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t d_count = ctx.constant("hidden"), f_count = ctx.constant("width");
  const int64_t experts = ctx.constant("experts"), topk = ctx.constant("topk"), rows = st.rows;
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::Act, rows * d_count));
  DSV41_ASSIGN_OR_RETURN(TensorView ids, scratch_arg(ctx, "ids", Want::I32, rows * topk));
  DSV41_ASSIGN_OR_RETURN(TensorView weights, scratch_arg(ctx, "weights", Want::F32, rows * topk));
  DSV41_ASSIGN_OR_RETURN(const std::vector<const float*> w1, weight_list_arg(ctx, "w1", experts, f_count * d_count));
  DSV41_ASSIGN_OR_RETURN(const std::vector<const float*> w3, weight_list_arg(ctx, "w3", experts, f_count * d_count));
  DSV41_ASSIGN_OR_RETURN(const std::vector<const float*> w2, weight_list_arg(ctx, "w2", experts, d_count * f_count));
  DSV41_ASSIGN_OR_RETURN(const float limit, limit_arg(ctx));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::F32, rows * d_count));
  const bool shared = ctx.has("shared_w1");
  DSV41_TRY(check_presence(ctx, "shared_w3", shared, "the shared expert needs shared_w1, shared_w3 and shared_w2"));
  DSV41_TRY(check_presence(ctx, "shared_w2", shared, "the shared expert needs shared_w1, shared_w3 and shared_w2"));
  if (shared)  // refused before any write, as the other weights
    for (const char* name : {"shared_w1", "shared_w3", "shared_w2"})
      DSV41_TRY(weight_arg(ctx, name, f_count * d_count).status());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; st.active(r) && k < topk; ++k)
      if (const int32_t e = ids.get_int(r * topk + k); e < 0 || e >= experts)
        return Status::errorf("op moe_experts: row {} routes to expert {}, outside [0, {})", r, e, experts);

  const std::vector<float> xf = read_all(x);
  std::vector<float> y(static_cast<size_t>(rows * d_count), 0.0f);  // inactive rows stay zero
  // One pass per choice k, so each row adds its experts in selection order.
  std::vector<std::vector<int64_t>> by_expert(static_cast<size_t>(experts));
  std::vector<std::vector<float>> by_expert_weight(static_cast<size_t>(experts));
  for (int64_t k = 0; k < topk; ++k) {
    for (auto& v : by_expert) v.clear();
    for (auto& v : by_expert_weight) v.clear();
    for (int64_t r = 0; r < rows; ++r) {
      if (!st.active(r)) continue;
      const int32_t e = ids.get_int(r * topk + k);
      by_expert[e].push_back(r);
      by_expert_weight[e].push_back(weights.get(r * topk + k));
    }
    for (int64_t e = 0; e < experts; ++e)
      if (!by_expert[e].empty())
        add_expert(xf, d_count, f_count, w1[e], w3[e], w2[e], limit, rounds(x), by_expert[e], by_expert_weight[e], y);
  }
  // The shared expert in the same call: exactly op shared_expert after the routed sum.
  if (shared) DSV41_TRY(add_shared_expert(ctx, "shared_", xf, rounds(x), y));
  write_floats(out, 0, rows * d_count, y.data());
  return Status::ok();
}

Status op_shared_expert(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "hidden", 1, kMaxDim));
  DSV41_TRY(check_constant(ctx, "width", 0, kMaxDim));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t d_count = ctx.constant("hidden"), rows = st.rows;
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::Act, rows * d_count));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::F32, rows * d_count));
  std::vector<float> y = read_all(out);  // accumulates onto the routed sum
  DSV41_TRY(add_shared_expert(ctx, "", read_all(x), rounds(x), y));
  write_floats(out, 0, rows * d_count, y.data());
  return Status::ok();
}

}  // namespace dsv41::cpu
