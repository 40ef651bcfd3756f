// runtime/cpu/ops_exchange.cpp — cross-rank exchanges: rank-ordered sum of partials and concatenation of column slices.
#include <numeric>

#include <fmt/ranges.h>

#include "runtime/cpu/ops.h"

namespace dsv41::cpu {

// Exchanges move every row, active or not: all ranks must make the same collective calls, and the
// values of inactive rows are never read.
Status op_exchange_sum(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "width", 1, int64_t{1} << 24));
  const int64_t width = ctx.constant("width"), rows = ctx.statics().rows;
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::F32, rows * width));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::AnyFloat, rows * width));
  const std::vector<float> partial = read_all(x);
  std::vector<float> total(partial.size());
  ctx.exchange().sum(ctx.rank(), partial.data(), rows * width, total.data());
  write_floats(out, 0, rows * width, total.data());  // rounds when out is BF16
  return Status::ok();
}

Status op_exchange_gather(const OpContext& ctx) {
  DSV41_TRY(check_constant(ctx, "width", 0, int64_t{1} << 24));
  const int64_t width = ctx.constant("width"), rows = ctx.statics().rows;
  const std::vector<int64_t>& widths = ctx.ints("widths");
  if (static_cast<int64_t>(widths.size()) != ctx.world() || ctx.rank() < 0 || ctx.rank() >= ctx.world())
    return Status::errorf("op exchange_gather: widths [{}] list {} ranks, the world has {} (rank {})",
                          fmt::join(widths, ", "), widths.size(), ctx.world(), ctx.rank());
  for (int64_t w : widths)
    if (w < 0 || w > (int64_t{1} << 24))
      return Status::errorf("op exchange_gather: widths [{}] hold {}", fmt::join(widths, ", "), w);
  if (widths[ctx.rank()] != width)
    return Status::errorf("op exchange_gather: widths[{}] is {}, but the call's width is {}", ctx.rank(),
                          widths[ctx.rank()], width);
  const int64_t total_width = std::accumulate(widths.begin(), widths.end(), int64_t{0});
  DSV41_ASSIGN_OR_RETURN(TensorView x, scratch_arg(ctx, "x", Want::F32, rows * width));
  DSV41_ASSIGN_OR_RETURN(TensorView out, scratch_arg(ctx, "out", Want::F32, rows * total_width));
  const std::vector<float> local = read_all(x);
  std::vector<float> all(static_cast<size_t>(rows * total_width));
  ctx.exchange().gather(ctx.rank(), local.data(), rows, widths, all.data());
  write_floats(out, 0, rows * total_width, all.data());
  return Status::ok();
}

}  // namespace dsv41::cpu
