// runtime/cpu/ops_hc.cpp — embedding broadcast and the hyper-connection ops (docs/model.md §4-5): mix, collapse, post.
#include <algorithm>
#include <cmath>

#include "runtime/cpu/ops.h"

namespace dsv41::cpu {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 24;  // bounds every constant so products cannot overflow

// The mix width (2+S)·S: pre (S) | post (S) | comb C (S·S, C[i][j] at i·S + j).
int64_t mix_width(int64_t streams) { return (2 + streams) * streams; }

// The Sinkhorn passes of docs/model.md §5 on an S×S comb, in place.
void sinkhorn(float* c, int64_t s_count, int64_t iters, float eps) {
  auto normalise_rows = [&] {
    for (int64_t i = 0; i < s_count; ++i) {
      float total = 0.0f;
      for (int64_t j = 0; j < s_count; ++j) total += c[i * s_count + j];
      for (int64_t j = 0; j < s_count; ++j) c[i * s_count + j] /= total + eps;
    }
  };
  auto normalise_columns = [&] {
    for (int64_t j = 0; j < s_count; ++j) {
      float total = 0.0f;
      for (int64_t i = 0; i < s_count; ++i) total += c[i * s_count + j];
      for (int64_t i = 0; i < s_count; ++i) c[i * s_count + j] /= total + eps;
    }
  };
  for (int64_t i = 0; i < s_count; ++i) {  // row softmax, then + eps
    float* row = c + i * s_count;
    const float top = *std::max_element(row, row + s_count);
    float total = 0.0f;
    for (int64_t j = 0; j < s_count; ++j) total += (row[j] = std::exp(row[j] - top));
    for (int64_t j = 0; j < s_count; ++j) row[j] = row[j] / total + eps;
  }
  normalise_columns();
  for (int64_t it = 1; it < iters; ++it) {
    normalise_rows();
    normalise_columns();
  }
}

// Every mHC op is shaped by the hidden size and the stream count.
Status check_hc_shape(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "hidden", 1, kMaxDim));
  return check_constant(ctx, "streams", 1, 64);
}

}  // namespace

Status op_embed(const OpContext& ctx) {
  DSV41_TRY(check_hc_shape(ctx));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t d_count = ctx.constant("hidden"), s_count = ctx.constant("streams"), rows = st.rows;
  const WeightView table = ctx.weight("table");
  int64_t table_numel = 1;
  for (int64_t d : table.shape) table_numel *= d;
  if (table_numel % d_count != 0 || table.data == nullptr)
    return Status::errorf("op embed: table {} has {} values, not whole rows of hidden {}", table.name, table_numel,
                          d_count);
  const int64_t vocab = table_numel / d_count;
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::Act, rows * s_count * d_count));
  return for_active_rows(st, {{&out, s_count * d_count}}, [&](int64_t r) -> Status {
    const int64_t base = r * s_count * d_count;
    const int64_t token = st.token(r);
    if (token < 0 || token >= vocab)
      return Status::errorf("op embed: row {} has token {}, outside the vocabulary [0, {})", r, token, vocab);
    for (int64_t s = 0; s < s_count; ++s) write_floats(out, base + s * d_count, d_count, table.data + token * d_count);
    return Status::ok();
  });
}

Status op_hc_pre_init(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "streams", 1, 64));
  DSV41_TRY(check_constant(ctx, "mix", ctx.constant("streams"), kMaxDim));
  const int64_t mix = ctx.constant("mix"), rows = ctx.statics().rows;
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::F32, rows * mix));
  write_zeros(out, 0, rows * mix);
  for (int64_t r = 0; r < rows; ++r) out.set(r * mix, 1.0f);  // the first collapse returns stream 0
  return Status::ok();
}

Status op_hc_mix(const OpContext& ctx) {
  DSV41_TRY(check_hc_shape(ctx));
  DSV41_TRY(check_constant(ctx, "sinkhorn_iters", 1, 1 << 16));
  const StaticsView& st = ctx.statics();
  const int64_t d_count = ctx.constant("hidden"), s_count = ctx.constant("streams");
  const int64_t iters = ctx.constant("sinkhorn_iters"), rows = st.rows, width = s_count * d_count;
  const int64_t mix = mix_width(s_count);
  DSV41_TRY(check_statics(ctx));
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::Act, rows * width));
  DSV41_ASSIGN_OR_RETURN(const float* fn, weight_arg(ctx, "fn", mix * width));
  DSV41_ASSIGN_OR_RETURN(const float* base, weight_arg(ctx, "base", mix));
  DSV41_ASSIGN_OR_RETURN(const float* scale, weight_arg(ctx, "scale", 3));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::F32, rows * mix));
  const auto eps = static_cast<float>(ctx.real("eps")), hc_eps = static_cast<float>(ctx.real("hc_eps"));

  std::vector<float> xr(static_cast<size_t>(width)), m(static_cast<size_t>(mix)), result(static_cast<size_t>(mix));
  return for_active_rows(st, {{&out, mix}}, [&](int64_t r) -> Status {
    read_floats(x, r * width, width, xr.data());
    float sum = 0.0f;
    for (float v : xr) sum += v * v;
    const float rho = 1.0f / std::sqrt(sum / static_cast<float>(width) + eps);
    matvec(fn, xr.data(), mix, width, m.data());
    for (float& v : m) v *= rho;
    for (int64_t s = 0; s < s_count; ++s) {
      result[s] = sigmoid(scale[0] * m[s] + base[s]) + hc_eps;
      result[s_count + s] = 2.0f * sigmoid(scale[1] * m[s_count + s] + base[s_count + s]);
    }
    float* comb = result.data() + 2 * s_count;
    for (int64_t k = 0; k < s_count * s_count; ++k) comb[k] = scale[2] * m[2 * s_count + k] + base[2 * s_count + k];
    sinkhorn(comb, s_count, iters, hc_eps);
    write_floats(out, r * mix, mix, result.data());
    return Status::ok();
  });
}

Status op_hc_collapse_norm(const OpContext& ctx) {
  DSV41_TRY(check_hc_shape(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t d_count = ctx.constant("hidden"), s_count = ctx.constant("streams"), rows = st.rows;
  const int64_t mix = mix_width(s_count);
  DSV41_TRY(check_statics(ctx));
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::Act, rows * s_count * d_count));
  DSV41_ASSIGN_OR_RETURN(TensorView mixv, scratch_arg(ctx, "mix", Want::F32, rows * mix));
  DSV41_ASSIGN_OR_RETURN(const float* norm, weight_arg(ctx, "norm", d_count));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::Act, rows * d_count));
  DSV41_TRY(check_same_dtype(ctx, "x", x, "out", out));
  const bool round = rounds(out);
  const auto eps = static_cast<float>(ctx.real("eps"));

  std::vector<float> xr(static_cast<size_t>(s_count * d_count)), pre(static_cast<size_t>(s_count));
  std::vector<float> h(static_cast<size_t>(d_count));
  return for_active_rows(st, {{&out, d_count}}, [&](int64_t r) -> Status {
    read_floats(x, r * s_count * d_count, s_count * d_count, xr.data());
    read_floats(mixv, r * mix, s_count, pre.data());
    std::fill(h.begin(), h.end(), 0.0f);
    for (int64_t s = 0; s < s_count; ++s)
      for (int64_t d = 0; d < d_count; ++d) h[d] += pre[s] * xr[s * d_count + d];
    for (float& v : h) v = round_if(round, v);  // the collapse is rounded before the norm (§2 row 2)
    rms_norm(h.data(), norm, d_count, eps, round, h.data());
    write_floats(out, r * d_count, d_count, h.data());
    return Status::ok();
  });
}

Status op_hc_post(const OpContext& ctx) {
  DSV41_TRY(check_hc_shape(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t d_count = ctx.constant("hidden"), s_count = ctx.constant("streams"), rows = st.rows;
  const int64_t mix = mix_width(s_count), width = s_count * d_count;
  DSV41_TRY(check_statics(ctx));
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::Act, rows * width));
  DSV41_ASSIGN_OR_RETURN(TensorView sub, scratch_arg(ctx, "sub", Want::Act, rows * d_count));
  DSV41_ASSIGN_OR_RETURN(TensorView mixv, scratch_arg(ctx, "mix", Want::F32, rows * mix));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::Act, rows * width));
  DSV41_TRY(check_same_dtype(ctx, "x", x, "sub", sub));
  DSV41_TRY(check_same_dtype(ctx, "x", x, "out", out));
  DSV41_TRY(check_distinct(ctx, "x", x, "out", out));

  std::vector<float> xr(static_cast<size_t>(width)), a(static_cast<size_t>(d_count));
  std::vector<float> mr(static_cast<size_t>(mix)), y(static_cast<size_t>(width));
  return for_active_rows(st, {{&out, width}}, [&](int64_t r) -> Status {
    read_floats(x, r * width, width, xr.data());
    read_floats(sub, r * d_count, d_count, a.data());
    read_floats(mixv, r * mix, mix, mr.data());
    const float* post = mr.data() + s_count;
    const float* comb = mr.data() + 2 * s_count;
    for (int64_t j = 0; j < s_count; ++j)
      for (int64_t d = 0; d < d_count; ++d) {
        float v = post[j] * a[d];
        for (int64_t i = 0; i < s_count; ++i) v += comb[i * s_count + j] * xr[i * d_count + d];
        y[j * d_count + d] = v;  // rounded by the BF16 store
      }
    write_floats(out, r * width, width, y.data());
    return Status::ok();
  });
}

}  // namespace dsv41::cpu
