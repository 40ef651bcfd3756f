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

// The fixed parts of hc_mix: its weights and constants.
struct MixParams {
  const float* fn;
  const float* base;
  const float* scale;
  int64_t streams, iters;
  float eps, hc_eps;
};

// One row of hc_mix from the row's S·D stream values: m is scratch of the mix width, result the row.
void mix_row(const MixParams& p, const float* xr, int64_t width, float* m, float* result) {
  const int64_t s_count = p.streams;
  float sum = 0.0f;
  for (int64_t i = 0; i < width; ++i) sum += xr[i] * xr[i];
  const float rho = 1.0f / std::sqrt(sum / static_cast<float>(width) + p.eps);
  const int64_t mix = mix_width(s_count);
  matvec(p.fn, xr, mix, width, m);
  for (int64_t k = 0; k < mix; ++k) m[k] *= rho;
  for (int64_t s = 0; s < s_count; ++s) {
    result[s] = sigmoid(p.scale[0] * m[s] + p.base[s]) + p.hc_eps;
    result[s_count + s] = 2.0f * sigmoid(p.scale[1] * m[s_count + s] + p.base[s_count + s]);
  }
  float* comb = result + 2 * s_count;
  for (int64_t k = 0; k < s_count * s_count; ++k) comb[k] = p.scale[2] * m[2 * s_count + k] + p.base[2 * s_count + k];
  sinkhorn(comb, s_count, p.iters, p.hc_eps);
}

// One row of hc_collapse_norm: h = b(Σ_s pre[s]·x[s]) (rounded before the norm, §2 row 2), then the rmsnorm.
void collapse_norm_row(const float* xr, const float* pre, const float* norm, int64_t s_count, int64_t d_count,
                       float eps, bool round, float* h) {
  std::fill(h, h + d_count, 0.0f);
  for (int64_t s = 0; s < s_count; ++s)
    for (int64_t d = 0; d < d_count; ++d) h[d] += pre[s] * xr[s * d_count + d];
  for (int64_t d = 0; d < d_count; ++d) h[d] = round_if(round, h[d]);
  rms_norm(h, norm, d_count, eps, round, h);
}

// One row of hc_post: y[j, d] = post[j]·a[d] + Σ_i C[i][j]·x[i, d] (rounded by the caller's store).
void post_row(const float* xr, const float* a, const float* mr, int64_t s_count, int64_t d_count, float* y) {
  const float* post = mr + s_count;
  const float* comb = mr + 2 * s_count;
  for (int64_t j = 0; j < s_count; ++j)
    for (int64_t d = 0; d < d_count; ++d) {
      float v = post[j] * a[d];
      for (int64_t i = 0; i < s_count; ++i) v += comb[i * s_count + j] * xr[i * d_count + d];
      y[j * d_count + d] = v;
    }
}

// hc_mix's weights and constants of a call (hc_mix, hc_step).
Result<MixParams> mix_params(const OpContext& ctx, int64_t width) {
  DSV41_TRY(check_constant(ctx, "sinkhorn_iters", 1, 1 << 16));
  const int64_t s_count = ctx.constant("streams"), mix = mix_width(s_count);
  MixParams p{};
  DSV41_ASSIGN_OR_RETURN(p.fn, weight_arg(ctx, "fn", mix * width));
  DSV41_ASSIGN_OR_RETURN(p.base, weight_arg(ctx, "base", mix));
  DSV41_ASSIGN_OR_RETURN(p.scale, weight_arg(ctx, "scale", 3));
  p.streams = s_count;
  p.iters = ctx.constant("sinkhorn_iters");
  p.eps = static_cast<float>(ctx.real("eps"));
  p.hc_eps = static_cast<float>(ctx.real("hc_eps"));
  return p;
}

// hc_post's buffers (named mix and out in hc_post, prev and next in hc_step), checked as hc_post checks them.
struct PostArgs {
  TensorView x, sub, mix, out;
};
Result<PostArgs> post_args(const OpContext& ctx, const char* mix_name, const char* out_name) {
  const int64_t d_count = ctx.constant("hidden"), s_count = ctx.constant("streams"), rows = ctx.statics().rows;
  PostArgs a;
  DSV41_ASSIGN_OR_RETURN(a.x, scratch_arg(ctx, "x", Want::Act, rows * s_count * d_count));
  DSV41_ASSIGN_OR_RETURN(a.sub, scratch_arg(ctx, "sub", Want::Act, rows * d_count));
  DSV41_ASSIGN_OR_RETURN(a.mix, scratch_arg(ctx, mix_name, Want::F32, rows * mix_width(s_count)));
  DSV41_ASSIGN_OR_RETURN(a.out, scratch_arg(ctx, out_name, Want::Act, rows * s_count * d_count));
  DSV41_TRY(check_same_dtype(ctx, "x", a.x, "sub", a.sub));
  DSV41_TRY(check_same_dtype(ctx, "x", a.x, out_name, a.out));
  DSV41_TRY(check_distinct(ctx, "x", a.x, out_name, a.out));
  return a;
}

// One row of hc_post from the buffers to y (the caller stores it): xr, a and mr are its scratch.
void post_of_row(const PostArgs& args, int64_t r, int64_t s_count, int64_t d_count, std::vector<float>& xr,
                 std::vector<float>& a, std::vector<float>& mr, float* y) {
  const int64_t width = s_count * d_count, mix = mix_width(s_count);
  read_floats(args.x, r * width, width, xr.data());
  read_floats(args.sub, r * d_count, d_count, a.data());
  read_floats(args.mix, r * mix, mix, mr.data());
  post_row(xr.data(), a.data(), mr.data(), s_count, d_count, y);
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
  const StaticsView& st = ctx.statics();
  const int64_t d_count = ctx.constant("hidden"), s_count = ctx.constant("streams");
  const int64_t rows = st.rows, width = s_count * d_count, mix = mix_width(s_count);
  DSV41_TRY(check_statics(ctx));
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::Act, rows * width));
  DSV41_ASSIGN_OR_RETURN(const MixParams p, mix_params(ctx, width));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::F32, rows * mix));

  std::vector<float> xr(static_cast<size_t>(width)), m(static_cast<size_t>(mix)), result(static_cast<size_t>(mix));
  return for_active_rows(st, {{&out, mix}}, [&](int64_t r) -> Status {
    read_floats(x, r * width, width, xr.data());
    mix_row(p, xr.data(), width, m.data(), result.data());
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
    collapse_norm_row(xr.data(), pre.data(), norm, s_count, d_count, eps, round, h.data());
    write_floats(out, r * d_count, d_count, h.data());
    return Status::ok();
  });
}

Status op_hc_post(const OpContext& ctx) {
  DSV41_TRY(check_hc_shape(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t d_count = ctx.constant("hidden"), s_count = ctx.constant("streams");
  const int64_t mix = mix_width(s_count), width = s_count * d_count;
  DSV41_TRY(check_statics(ctx));
  DSV41_ASSIGN_OR_RETURN(const PostArgs args, post_args(ctx, "mix", "out"));

  std::vector<float> xr(static_cast<size_t>(width)), a(static_cast<size_t>(d_count));
  std::vector<float> mr(static_cast<size_t>(mix)), y(static_cast<size_t>(width));
  TensorView out = args.out;
  return for_active_rows(st, {{&out, width}}, [&](int64_t r) -> Status {
    post_of_row(args, r, s_count, d_count, xr, a, mr, y.data());
    write_floats(out, r * width, width, y.data());  // rounded by the BF16 store
    return Status::ok();
  });
}

// hc_post, hc_mix and hc_collapse_norm of one sublayer front in one op: the same row functions, with the
// new streams rounded by their store to next and read back, so the three outputs have those ops' bits.
Status op_hc_step(const OpContext& ctx) {
  DSV41_TRY(check_hc_shape(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t d_count = ctx.constant("hidden"), s_count = ctx.constant("streams"), rows = st.rows;
  const int64_t mix = mix_width(s_count), width = s_count * d_count;
  DSV41_TRY(check_statics(ctx));
  DSV41_ASSIGN_OR_RETURN(const PostArgs args, post_args(ctx, "prev", "next"));
  DSV41_ASSIGN_OR_RETURN(const MixParams p, mix_params(ctx, width));
  DSV41_ASSIGN_OR_RETURN(const float* norm, weight_arg(ctx, "norm", d_count));
  DSV41_ASSIGN_OR_RETURN(TensorView mixv, scratch_arg(ctx, "mix", Want::F32, rows * mix));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::Act, rows * d_count));
  DSV41_TRY(check_same_dtype(ctx, "x", args.x, "out", out));
  const bool round = rounds(out);

  std::vector<float> xr(static_cast<size_t>(width)), a(static_cast<size_t>(d_count)), pm(static_cast<size_t>(mix));
  std::vector<float> y(static_cast<size_t>(width)), m(static_cast<size_t>(mix)), result(static_cast<size_t>(mix));
  std::vector<float> h(static_cast<size_t>(d_count));
  TensorView next = args.out;
  return for_active_rows(st, {{&next, width}, {&mixv, mix}, {&out, d_count}}, [&](int64_t r) -> Status {
    post_of_row(args, r, s_count, d_count, xr, a, pm, y.data());
    write_floats(next, r * width, width, y.data());
    read_floats(next, r * width, width, y.data());  // the stored (rounded) streams, as the next op reads them
    mix_row(p, y.data(), width, m.data(), result.data());
    write_floats(mixv, r * mix, mix, result.data());
    collapse_norm_row(y.data(), pm.data(), norm, s_count, d_count, p.eps, round, h.data());
    write_floats(out, r * d_count, d_count, h.data());
    return Status::ok();
  });
}

}  // namespace dsv41::cpu
