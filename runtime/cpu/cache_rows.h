// runtime/cpu/cache_rows.h — private to the CPU ops: one slot's cache as rows of fp32 values, whether it
// holds activations (bf16 format) or rows packed in the official format of its role.
#pragma once

#include <string>

#include "common/cache_format.h"
#include "runtime/cpu/ops.h"

namespace dsv41::cpu {

struct CacheRows {
  TensorView view;
  CacheRole role = CacheRole::Window;
  int64_t dim = 0;
  bool packed = false;  // U8 rows of packed_row_bytes(role, dim); else activations of `dim` values
  int64_t row_width() const { return packed ? packed_row_bytes(role, dim) : dim; }
  int64_t rows() const { return view.numel() / row_width(); }
  // Row `row` as fp32: dequantized when packed.
  void read(int64_t row, float* values) const;
  // Stores `values` (dim of them) at `row`: packed as the official code rounds it, else as the view
  // stores (bf16 rounding on a BF16 view).
  void write(int64_t row, const float* values) const;
};

// The state argument `arg` of one slot as whole rows of `dim` values of `role`, at least `min_rows`
// of them: Act (BF16, or F32 in check mode) or a packed cache (U8). Refusals name the op, the
// argument, the slot and the sizes.
Result<CacheRows> cache_rows_arg(const OpContext& ctx, const std::string& arg, int slot, CacheRole role, int64_t dim,
                                 int64_t min_rows = 0);

}  // namespace dsv41::cpu
