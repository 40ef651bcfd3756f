// runtime/cpu/ops_linear.cpp — products with fp32 accumulation (plain and block-diagonal) and RMSNorm.
#include <algorithm>

#include "runtime/cpu/ops.h"

namespace dsv41::cpu {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 24;
// Rows per block: a block's inputs stay in cache while every weight row passes over them once.
constexpr int64_t kRowBlock = 32;

// out[r, out0 + o] = x[r, in0 .. in0+n) · w[o] for o < outs, active rows only; x holds every row
// of the phase in fp32 (`x_width` per row), y is the fp32 result [rows, y_width].
void product(const StaticsView& st, const std::vector<float>& x, int64_t x_width, int64_t in0, const float* w,
             int64_t outs, int64_t n, std::vector<float>& y, int64_t y_width, int64_t out0) {
  const int64_t rows = st.rows;
  std::vector<int64_t> active;
  for (int64_t r = 0; r < rows; ++r)
    if (st.active(r)) active.push_back(r);
  for (size_t b = 0; b < active.size(); b += kRowBlock) {
    const size_t end = std::min(active.size(), b + kRowBlock);
    for (int64_t o = 0; o < outs; ++o)
      for (size_t k = b; k < end; k += 4) {
        const int count = static_cast<int>(std::min<size_t>(4, end - k));
        const float* rows[4];
        float result[4];
        for (int i = 0; i < count; ++i) rows[i] = x.data() + active[k + i] * x_width + in0;
        dot_rows(w + o * n, rows, count, n, result);
        for (int i = 0; i < count; ++i) y[active[k + i] * y_width + out0 + o] = result[i];
      }
  }
}

}  // namespace

Status op_linear(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "in_features", 1, kMaxDim));
  DSV41_TRY(check_constant(ctx, "out_features", 1, kMaxDim));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t in = ctx.constant("in_features"), outs = ctx.constant("out_features"), rows = st.rows;
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::AnyFloat, rows * in));
  DSV41_ASSIGN_OR_RETURN(const float* w, weight_arg(ctx, "w", outs * in));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::AnyFloat, rows * outs));
  const std::vector<float> xf = read_all(x);
  std::vector<float> y(static_cast<size_t>(rows * outs), 0.0f);  // inactive rows stay zero
  product(st, xf, in, 0, w, outs, in, y, outs, 0);
  write_floats(out, 0, rows * outs, y.data());
  return Status::ok();
}

Status op_grouped_linear(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "groups", 1, kMaxDim));
  DSV41_TRY(check_constant(ctx, "in_per_group", 1, kMaxDim));
  DSV41_TRY(check_constant(ctx, "out_per_group", 1, kMaxDim));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t groups = ctx.constant("groups"), in_g = ctx.constant("in_per_group");
  const int64_t out_g = ctx.constant("out_per_group"), rows = st.rows;
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::AnyFloat, rows * groups * in_g));
  DSV41_ASSIGN_OR_RETURN(const float* w, weight_arg(ctx, "w", groups * out_g * in_g));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::AnyFloat, rows * groups * out_g));
  const std::vector<float> xf = read_all(x);
  std::vector<float> y(static_cast<size_t>(rows * groups * out_g), 0.0f);
  for (int64_t g = 0; g < groups; ++g)
    product(st, xf, groups * in_g, g * in_g, w + g * out_g * in_g, out_g, in_g, y, groups * out_g, g * out_g);
  write_floats(out, 0, rows * groups * out_g, y.data());
  return Status::ok();
}

Status op_rmsnorm(const OpContext& ctx) { return rmsnorm_rows(ctx, nullptr); }

Status rmsnorm_rows(const OpContext& ctx, const std::vector<double>* rope_freqs) {
  DSV41_TRY(check_constant(ctx, "width", 1, kMaxDim));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t width = ctx.constant("width"), rows = st.rows;
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::AnyFloat, rows * width));
  DSV41_ASSIGN_OR_RETURN(const float* w, weight_arg(ctx, "w", width));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::Act, rows * width));
  DSV41_TRY(check_distinct(ctx, "x", x, "out", out));
  const auto eps = static_cast<float>(ctx.real("eps"));
  std::vector<float> v(static_cast<size_t>(width));
  return for_active_rows(st, {{&out, width}}, [&](int64_t r) -> Status {
    read_floats(x, r * width, width, v.data());
    rms_norm(v.data(), w, width, eps, rounds(out), v.data());
    if (rope_freqs) rope_rotate(v.data(), width, *rope_freqs, st.position(r), false);
    write_floats(out, r * width, width, v.data());
    return Status::ok();
  });
}

}  // namespace dsv41::cpu
