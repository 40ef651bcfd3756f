// runtime/cpu/ops.h — private to the CPU backend: the op functions find_cpu_op returns, and the argument checks they share.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "runtime/cpu/op_context.h"
#include "runtime/cpu/rope_math.h"

namespace dsv41::cpu {

// One function per op of common/op_set.cpp; semantics in docs/ops.md.
Status op_embed(const OpContext& ctx);
Status op_hc_pre_init(const OpContext& ctx);
Status op_hc_mix(const OpContext& ctx);
Status op_hc_collapse_norm(const OpContext& ctx);
Status op_hc_post(const OpContext& ctx);
Status op_linear(const OpContext& ctx);
Status op_grouped_linear(const OpContext& ctx);
Status op_rmsnorm(const OpContext& ctx);
Status op_rope(const OpContext& ctx);
Status op_rmsnorm_rope(const OpContext& ctx);
// rmsnorm's rows (runtime/cpu/ops_linear.cpp), each then rotated forward by `rope_freqs` when given
// (rmsnorm_rope): one body for both ops.
Status rmsnorm_rows(const OpContext& ctx, const std::vector<double>* rope_freqs);
Status op_compress(const OpContext& ctx);
Status op_index_select(const OpContext& ctx);
Status op_sparse_attention(const OpContext& ctx);
Status op_window_store(const OpContext& ctx);
Status op_exchange_sum(const OpContext& ctx);
Status op_exchange_gather(const OpContext& ctx);
Status op_router(const OpContext& ctx);
Status op_moe_experts(const OpContext& ctx);
Status op_shared_expert(const OpContext& ctx);
Status op_engram_hash(const OpContext& ctx);
Status op_engram_lookback(const OpContext& ctx);
Status op_engram_gather(const OpContext& ctx);
Status op_engram_gate(const OpContext& ctx);

// ---- argument checks: each refusal names the op, the argument and the sizes ----

// The element types an argument may have. Act is an activation holding the model's bf16 values:
// BF16 when serving, F32 in the check mode of docs/model.md §2 (no rounding anywhere). An op
// rounds inside (b(v) at a point that is not a store) exactly when its activations are BF16, and
// all activations of one op must agree. F32 is always fp32 (mixes, raw rows, partial sums);
// AnyFloat is either, the emitter's choice deciding the rounding of a store.
enum class Want : uint8_t { AnyFloat, F32, Act, I32 };

// Whether values stored into `view` are rounded to bf16: the op's rounding mode.
inline bool rounds(const TensorView& view) { return view.dtype == DType::BF16; }
inline float round_if(bool round, float v) { return round ? bf16_round(v) : v; }

// A scratch argument of exactly `numel` elements.
Result<TensorView> scratch_arg(const OpContext& ctx, const std::string& arg, Want want, int64_t numel);
// A state argument of one slot with exactly `numel` elements.
Result<TensorView> state_arg(const OpContext& ctx, const std::string& arg, int slot, Want want, int64_t numel);
// A state argument of one slot holding whole rows of `width` elements (a cache: its row count is
// the capacity, numel / width).
Result<TensorView> state_rows_arg(const OpContext& ctx, const std::string& arg, int slot, Want want, int64_t width);
// A state ring of one slot: whole rows of `width`, at least `min_rows` of them (a ring planned for
// drafting is longer than its window: compiler/plan/state_layout.h). Its row count is the modulus.
Result<TensorView> state_ring_arg(const OpContext& ctx, const std::string& arg, int slot, Want want, int64_t width,
                                  int64_t min_rows);
// A weight of exactly `numel` fp32 values.
Result<const float*> weight_arg(const OpContext& ctx, const std::string& arg, int64_t numel);
// A weight list of `count` weights of `numel` values each.
Result<std::vector<const float*>> weight_list_arg(const OpContext& ctx, const std::string& arg, int64_t count,
                                                  int64_t numel);
// Refuses a constant outside [lo, hi].
Status check_constant(const OpContext& ctx, const std::string& name, int64_t lo, int64_t hi);
// The statics block must hold its rows; positions of active rows must be non-negative.
Status check_statics(const OpContext& ctx);
// Refuses an optional argument whose presence differs from `expected`.
Status check_presence(const OpContext& ctx, const std::string& arg, bool expected, const std::string& rule);
// Activations of one op must have one dtype (both BF16, or both F32 in the check mode).
Status check_same_dtype(const OpContext& ctx, const std::string& a, const TensorView& va, const std::string& b,
                        const TensorView& vb);
// Two arguments that must not be the same buffer.
Status check_distinct(const OpContext& ctx, const std::string& a, const TensorView& va, const std::string& b,
                      const TensorView& vb);

// The layer's rope frequencies from the call's theta/yarn_* /beta_* arguments (docs/model.md §3).
Result<std::vector<double>> rope_from_args(const OpContext& ctx, int64_t rope_dim);

// ---- numeric pieces shared by several ops (docs/model.md §3) ----

// Reads n elements from offset as fp32 / writes n fp32 values (rounding on a BF16 view).
void read_floats(const TensorView& view, int64_t offset, int64_t n, float* dst);
void write_floats(const TensorView& view, int64_t offset, int64_t n, const float* src);
void write_zeros(const TensorView& view, int64_t offset, int64_t n);

// One output of a row-wise op: `width` values a row, zeroed on inactive rows.
struct RowOutput {
  const TensorView* view;
  int64_t width;
};
// The loop of every row-wise op: an inactive row's outputs are zeroed (never read, but the bytes
// stay deterministic), an active row r runs `row(r)`; the first failed row's Status is returned.
template <class RowFn>
Status for_active_rows(const StaticsView& st, std::initializer_list<RowOutput> outputs, RowFn&& row) {
  for (int64_t r = 0; r < st.rows; ++r) {
    if (!st.active(r)) {
      for (const RowOutput& o : outputs) write_zeros(*o.view, r * o.width, o.width);
      continue;
    }
    DSV41_TRY(row(r));
  }
  return Status::ok();
}
// All rows of a [R, width] view as fp32 (inactive rows included: they are read, never used).
std::vector<float> read_all(const TensorView& view);

// Σ a[i]·b[i] in fp32, eight interleaved partial sums (the order of an fp32 sum is free, and this
// one vectorises; tests/reference uses the same order, so world-1 results match it bit for bit).
float dot(const float* a, const float* b, int64_t n);
// out[k] = dot(w, rows[k], n) for k < count <= 4, bit for bit, in one pass over w.
void dot_rows(const float* w, const float* const* rows, int count, int64_t n, float* out);
// out[o] = dot(w[o], x) for o < rows, w is [rows, n].
void matvec(const float* w, const float* x, int64_t rows, int64_t n, float* out);
// out = RMSNorm(v, w) = b(v·(mean(v²) + eps)^−½·w) (b only when `round`), may alias v.
void rms_norm(const float* v, const float* w, int64_t n, float eps, bool round, float* out);
float sigmoid(float v);
float silu(float v);
float softplus(float v);

}  // namespace dsv41::cpu
