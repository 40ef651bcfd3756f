// runtime/cpu/cache_rows.cpp — one slot's cache rows, packed (official format) or as activations.
#include "runtime/cpu/cache_rows.h"

namespace dsv41::cpu {

void CacheRows::read(int64_t row, float* values) const {
  if (!packed) return read_floats(view, row * dim, dim, values);
  const int64_t width = row_width();
  DSV41_CHECK(row >= 0 && (row + 1) * width <= view.numel());
  unpack_cache_row(role, view.data + row * width, dim, values);
}

void CacheRows::write(int64_t row, const float* values) const {
  if (!packed) return write_floats(view, row * dim, dim, values);
  const int64_t width = row_width();
  DSV41_CHECK(row >= 0 && (row + 1) * width <= view.numel());
  pack_cache_row(role, values, dim, view.data + row * width);
}

Result<CacheRows> cache_rows_arg(const OpContext& ctx, const std::string& arg, int slot, CacheRole role, int64_t dim,
                                 int64_t min_rows) {
  CacheRows c;
  c.role = role;
  c.dim = dim;
  const TensorView probe = ctx.state(arg, slot);
  if (probe.dtype != kPackedCacheDType) {
    DSV41_ASSIGN_OR_RETURN(c.view, min_rows > 0 ? state_ring_arg(ctx, arg, slot, Want::Act, dim, min_rows)
                                                : state_rows_arg(ctx, arg, slot, Want::Act, dim));
    return c;
  }
  c.packed = true;
  c.view = probe;
  if (dim % packed_group(role) != 0)
    return Status::errorf("op {}: {} (slot {}) is packed, but its rows of {} values are not whole groups of {}",
                          ctx.call().op, arg, slot, dim, packed_group(role));
  const int64_t width = c.row_width();
  if (probe.data == nullptr || probe.numel() % width != 0 || probe.numel() / width < min_rows)
    return Status::errorf("op {}: {} (slot {}) holds {} bytes, expected whole packed rows of {} bytes ({} values), at "
                          "least {} of them", ctx.call().op, arg, slot, probe.numel(), width, dim, min_rows);
  return c;
}

}  // namespace dsv41::cpu
