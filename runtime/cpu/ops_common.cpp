// runtime/cpu/ops_common.cpp — argument checks every CPU op runs first, and the small numeric helpers they share.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/ranges.h>

#include "runtime/cpu/ops.h"

namespace dsv41::cpu {
namespace {

bool dtype_fits(DType dtype, Want want) {
  switch (want) {
    case Want::AnyFloat: return dtype == DType::F32 || dtype == DType::BF16;
    case Want::F32: return dtype == DType::F32;
    case Want::Act: return dtype == DType::BF16 || dtype == DType::F32;
    case Want::I32: return dtype == DType::I32;
  }
  return false;
}

std::string_view want_name(Want want) {
  switch (want) {
    case Want::AnyFloat: return "F32 or BF16";
    case Want::F32: return "F32";
    case Want::Act: return "BF16 (or F32 in the check mode)";
    case Want::I32: return "I32";
  }
  return "?";
}

Status check_view(const OpContext& ctx, const std::string& arg, const TensorView& view, Want want) {
  if (!dtype_fits(view.dtype, want))
    return Status::errorf("op {}: {} is {}, expected {}", ctx.call().op, arg, dtype_name(view.dtype), want_name(want));
  for (int64_t d : view.shape)
    if (d < 0) return Status::errorf("op {}: {} has shape [{}]", ctx.call().op, arg, fmt::join(view.shape, ", "));
  if (view.data == nullptr && view.numel() > 0)
    return Status::errorf("op {}: {} has no storage", ctx.call().op, arg);
  return Status::ok();
}

Status check_numel(const OpContext& ctx, const std::string& arg, const TensorView& view, int64_t numel) {
  if (view.numel() != numel)
    return Status::errorf("op {}: {} has shape [{}] ({} values), expected {} values", ctx.call().op, arg,
                          fmt::join(view.shape, ", "), view.numel(), numel);
  return Status::ok();
}

}  // namespace

Result<TensorView> scratch_arg(const OpContext& ctx, const std::string& arg, Want want, int64_t numel) {
  TensorView view = ctx.scratch(arg);
  DSV41_TRY(check_view(ctx, arg, view, want));
  DSV41_TRY(check_numel(ctx, arg, view, numel));
  return view;
}

Result<TensorView> state_arg(const OpContext& ctx, const std::string& arg, int slot, Want want, int64_t numel) {
  TensorView view = ctx.state(arg, slot);
  DSV41_TRY(check_view(ctx, arg, view, want).with_context(fmt::format("slot {}", slot)));
  DSV41_TRY(check_numel(ctx, arg, view, numel).with_context(fmt::format("slot {}", slot)));
  return view;
}

Result<TensorView> state_rows_arg(const OpContext& ctx, const std::string& arg, int slot, Want want, int64_t width) {
  TensorView view = ctx.state(arg, slot);
  DSV41_TRY(check_view(ctx, arg, view, want).with_context(fmt::format("slot {}", slot)));
  if (width <= 0 || view.numel() % width != 0)
    return Status::errorf("op {}: {} (slot {}) has shape [{}] ({} values), not whole rows of {}", ctx.call().op, arg,
                          slot, fmt::join(view.shape, ", "), view.numel(), width);
  return view;
}

Result<TensorView> state_ring_arg(const OpContext& ctx, const std::string& arg, int slot, Want want, int64_t width,
                                  int64_t min_rows) {
  DSV41_ASSIGN_OR_RETURN(TensorView view, state_rows_arg(ctx, arg, slot, want, width));
  if (view.numel() / width < min_rows)
    return Status::errorf("op {}: {} (slot {}) holds {} rows of {}, expected at least {}", ctx.call().op, arg, slot,
                          view.numel() / width, width, min_rows);
  return view;
}

Result<const float*> weight_arg(const OpContext& ctx, const std::string& arg, int64_t numel) {
  const WeightView w = ctx.weight(arg);
  int64_t n = 1;
  for (int64_t d : w.shape) n *= d;
  if (n != numel)
    return Status::errorf("op {}: weight {} ({}) has shape [{}] ({} values), expected {} values", ctx.call().op, arg,
                          w.name, fmt::join(w.shape, ", "), n, numel);
  if (w.data == nullptr && numel > 0) return Status::errorf("op {}: weight {} ({}) has no data", ctx.call().op, arg, w.name);
  return w.data;
}

Result<std::vector<const float*>> weight_list_arg(const OpContext& ctx, const std::string& arg, int64_t count,
                                                  int64_t numel) {
  const std::vector<WeightView> list = ctx.weights(arg);
  if (static_cast<int64_t>(list.size()) != count)
    return Status::errorf("op {}: {} lists {} weights, expected {}", ctx.call().op, arg, list.size(), count);
  std::vector<const float*> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const WeightView& w = list[i];
    int64_t n = 1;
    for (int64_t d : w.shape) n *= d;
    if (n != numel || (w.data == nullptr && numel > 0))
      return Status::errorf("op {}: {}[{}] ({}) has shape [{}] ({} values), expected {} values", ctx.call().op, arg, i,
                            w.name, fmt::join(w.shape, ", "), n, numel);
    out.push_back(w.data);
  }
  return out;
}

Status check_constant(const OpContext& ctx, const std::string& name, int64_t lo, int64_t hi) {
  const int64_t v = ctx.constant(name);
  if (v < lo || v > hi)
    return Status::errorf("op {}: constant {} is {}, expected {} .. {}", ctx.call().op, name, v, lo, hi);
  return Status::ok();
}

Status check_statics(const OpContext& ctx) {
  const StaticsView& st = ctx.statics();
  if (st.rows < 0) return Status::errorf("op {}: statics hold {} rows", ctx.call().op, st.rows);
  if (st.rows > 0 && st.data == nullptr) return Status::errorf("op {}: statics block missing", ctx.call().op);
  for (int64_t r = 0; r < st.rows; ++r)
    if (st.active(r) && st.position(r) < 0)
      return Status::errorf("op {}: row {} has position {}", ctx.call().op, r, st.position(r));
  return Status::ok();
}

Status check_presence(const OpContext& ctx, const std::string& arg, bool expected, const std::string& rule) {
  if (ctx.has(arg) != expected)
    return Status::errorf("op {}: argument {} is {}, but it must be {} ({})", ctx.call().op, arg,
                          ctx.has(arg) ? "present" : "absent", expected ? "present" : "absent", rule);
  return Status::ok();
}

Status check_same_dtype(const OpContext& ctx, const std::string& a, const TensorView& va, const std::string& b,
                        const TensorView& vb) {
  if (va.dtype != vb.dtype)
    return Status::errorf("op {}: {} is {} but {} is {}: one op's activations share a dtype", ctx.call().op, a,
                          dtype_name(va.dtype), b, dtype_name(vb.dtype));
  return Status::ok();
}

Status check_distinct(const OpContext& ctx, const std::string& a, const TensorView& va, const std::string& b,
                      const TensorView& vb) {
  if (va.data != nullptr && va.data == vb.data)
    return Status::errorf("op {}: {} and {} are the same buffer", ctx.call().op, a, b);
  return Status::ok();
}

void read_floats(const TensorView& view, int64_t offset, int64_t n, float* dst) {
  DSV41_CHECK(offset >= 0 && n >= 0 && offset + n <= view.numel());
  if (view.dtype == DType::F32) {
    if (n > 0) std::memcpy(dst, view.data + 4 * offset, 4 * static_cast<size_t>(n));
    return;
  }
  if (view.dtype == DType::BF16) {  // the hot path of every op: no per-element checks
    for (int64_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, view.data + 2 * (offset + i), 2);
      dst[i] = bf16_to_f32(bits);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = view.get(offset + i);
}

void write_floats(const TensorView& view, int64_t offset, int64_t n, const float* src) {
  DSV41_CHECK(offset >= 0 && n >= 0 && offset + n <= view.numel());
  if (view.dtype == DType::F32) {
    if (n > 0) std::memcpy(view.data + 4 * offset, src, 4 * static_cast<size_t>(n));
    return;
  }
  if (view.dtype == DType::BF16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t bits = f32_to_bf16(src[i]);
      std::memcpy(view.data + 2 * (offset + i), &bits, 2);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) view.set(offset + i, src[i]);
}

void write_zeros(const TensorView& view, int64_t offset, int64_t n) {
  DSV41_CHECK(offset >= 0 && n >= 0 && offset + n <= view.numel());
  // +0.0 and integer 0 are all-zero bits in every dtype an op writes.
  if (n > 0) std::memset(view.data + static_cast<int64_t>(dtype_bytes(view.dtype)) * offset, 0,
                         static_cast<size_t>(dtype_bytes(view.dtype) * n));
}

std::vector<float> read_all(const TensorView& view) {
  std::vector<float> out(static_cast<size_t>(view.numel()));
  read_floats(view, 0, view.numel(), out.data());
  return out;
}

namespace {

// Four fp32 lanes (GCC/Clang vector extension, plain SSE2 on x86-64): lane k of `lo`/`hi` is the
// scalar partial sum acc[k] / acc[4 + k] of the eight-way dot, so results do not depend on it.
typedef float Lanes __attribute__((vector_size(16)));

Lanes load(const float* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float finish(Lanes lo, Lanes hi, const float* a, const float* b, int64_t i, int64_t n) {
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((lo[0] + lo[1]) + (lo[2] + lo[3])) + ((hi[0] + hi[1]) + (hi[2] + hi[3])) + tail;
}

}  // namespace

float dot(const float* a, const float* b, int64_t n) {
  Lanes lo = {0, 0, 0, 0}, hi = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    lo += load(a + i) * load(b + i);
    hi += load(a + i + 4) * load(b + i + 4);
  }
  return finish(lo, hi, a, b, i, n);
}

void dot_rows(const float* w, const float* const* rows, int count, int64_t n, float* out) {
  DSV41_CHECK(count >= 1 && count <= 4);
  // Spare lanes repeat row 0; the four rows are spelled out so the sums stay in registers.
  const float* x0 = rows[0];
  const float* x1 = rows[count > 1 ? 1 : 0];
  const float* x2 = rows[count > 2 ? 2 : 0];
  const float* x3 = rows[count > 3 ? 3 : 0];
  Lanes lo0 = {}, hi0 = {}, lo1 = {}, hi1 = {}, lo2 = {}, hi2 = {}, lo3 = {}, hi3 = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const Lanes w0 = load(w + i), w1 = load(w + i + 4);
    lo0 += w0 * load(x0 + i);
    hi0 += w1 * load(x0 + i + 4);
    lo1 += w0 * load(x1 + i);
    hi1 += w1 * load(x1 + i + 4);
    lo2 += w0 * load(x2 + i);
    hi2 += w1 * load(x2 + i + 4);
    lo3 += w0 * load(x3 + i);
    hi3 += w1 * load(x3 + i + 4);
  }
  const float result[4] = {finish(lo0, hi0, w, x0, i, n), finish(lo1, hi1, w, x1, i, n), finish(lo2, hi2, w, x2, i, n),
                           finish(lo3, hi3, w, x3, i, n)};
  for (int k = 0; k < count; ++k) out[k] = result[k];
}

void matvec(const float* w, const float* x, int64_t rows, int64_t n, float* out) {
  for (int64_t o = 0; o < rows; ++o) out[o] = dot(w + o * n, x, n);
}

void rms_norm(const float* v, const float* w, int64_t n, float eps, bool round, float* out) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += v[i] * v[i];
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = round_if(round, v[i] * inv * w[i]);
}

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }
float silu(float v) { return v * sigmoid(v); }
float softplus(float v) { return std::max(v, 0.0f) + std::log1p(std::exp(-std::fabs(v))); }

Result<std::vector<double>> rope_from_args(const OpContext& ctx, int64_t rope_dim) {
  RopeParams params;
  params.theta = ctx.real("theta");
  params.yarn_factor = ctx.real("yarn_factor");
  params.yarn_original = ctx.integer("yarn_original");
  params.beta_fast = ctx.real("beta_fast");
  params.beta_slow = ctx.real("beta_slow");
  if (rope_dim < 0 || rope_dim % 2 != 0)
    return Status::errorf("op {}: rope_dim {} is not a non-negative even number", ctx.call().op, rope_dim);
  if (!(params.theta > 0.0) || !std::isfinite(params.theta))
    return Status::errorf("op {}: theta {} is not a positive number", ctx.call().op, params.theta);
  if (yarn_enabled(params) && !(params.beta_fast > 0.0 && params.beta_slow > 0.0 && params.theta != 1.0))
    return Status::errorf("op {}: YaRN needs beta_fast, beta_slow > 0 and theta != 1 (got {}, {}, {})",
                          ctx.call().op, params.beta_fast, params.beta_slow, params.theta);
  return rope_frequencies(rope_dim, params);
}

}  // namespace dsv41::cpu
