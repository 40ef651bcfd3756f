// runtime/cpu/ops_rope.cpp — the rope op (forward or inverse rotation of the last rope_dim dims of every head)
// and rmsnorm_rope (the window row's norm and rope in one op).
#include "runtime/cpu/ops.h"

namespace dsv41::cpu {

Status op_rope(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "heads", 1, 1 << 20));
  DSV41_TRY(check_constant(ctx, "head_dim", 1, 1 << 20));
  DSV41_TRY(check_constant(ctx, "rope_dim", 0, ctx.constant("head_dim")));
  DSV41_TRY(check_constant(ctx, "inverse", 0, 1));
  DSV41_TRY(check_statics(ctx));
  const StaticsView& st = ctx.statics();
  const int64_t heads = ctx.constant("heads"), head_dim = ctx.constant("head_dim"), rows = st.rows;
  const int64_t width = heads * head_dim;
  const bool inverse = ctx.constant("inverse") == 1;
  DSV41_ASSIGN_OR_RETURN(const std::vector<double> freqs, rope_from_args(ctx, ctx.constant("rope_dim")));
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::AnyFloat, rows * width));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::AnyFloat, rows * width));
  // x and out may be one buffer: each row is read whole before it is written.
  std::vector<float> v(static_cast<size_t>(width));
  return for_active_rows(st, {{&out, width}}, [&](int64_t r) -> Status {
    read_floats(x, r * width, width, v.data());
    for (int64_t h = 0; h < heads; ++h) rope_rotate(v.data() + h * head_dim, head_dim, freqs, st.position(r), inverse);
    write_floats(out, r * width, width, v.data());
    return Status::ok();
  });
}

// rmsnorm into `out`, then rope of `out` in place: the norm's store rounds before the rotation.
Status op_rmsnorm_rope(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "width", 1, 1 << 24));
  DSV41_TRY(check_constant(ctx, "rope_dim", 0, ctx.constant("width")));
  DSV41_ASSIGN_OR_RETURN(const std::vector<double> freqs, rope_from_args(ctx, ctx.constant("rope_dim")));
  return rmsnorm_rows(ctx, &freqs);
}

}  // namespace dsv41::cpu
