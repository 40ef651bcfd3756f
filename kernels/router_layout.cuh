// kernels/router_layout.cuh — the router's block shape and shared-memory layout (kernels/router.cuh,
// kernels/router_products.cuh); common/kernel_launch_moe.cpp launch_router mirrors these numbers.
#pragma once

#include "cp_async.cuh"
#include "kernel_abi.cuh"

namespace dsv41k {
namespace router_detail {
constexpr int kRowsPerBlock = 4;  // a warp a row
constexpr int kThreads = 32 * kRowsPerBlock;
constexpr int kExpertsPerBlock = 4;
constexpr int kRouterRows = 16;  // phases of at most this many rows split a row's experts over blocks
constexpr int kParts = 4;        // cp.async groups a gate row is copied in
constexpr int kProducers = kThreads - 32;  // at one row, warps 1-3 form the products (router_products.cuh)
__device__ constexpr long long stage_row(long long d) { return d + 8; }  // bf16; the four rows in other banks
// Floats a product row holds (one row, BF16 gates, D % 128 == 0): the D / 8 products of an (expert, class)
// chain, padded so that a row starts 16 bytes past the previous one modulo 128 (warp 0's 16-byte loads of
// 8 consecutive lanes then fall in distinct banks). 32 rows follow the staged x row.
__device__ constexpr long long product_row(long long d) { return (d / 8 + 31) / 32 * 32 + 4; }
__device__ constexpr long long static_shared_bytes(long long e) { return kRowsPerBlock * (8 * e + 1024); }

#ifndef DSV41_CONTRACT_SCAN
// Waits until this thread's copies of gate parts 0 .. part (and x's group, committed before them) have
// landed: of the kParts groups, kParts − 1 − part may still be in flight.
__device__ __forceinline__ void wait_gate_part(int part) {
  static_assert(kParts == 4, "the waits below count four groups");
  if (part == 0) cp_async_wait<3>();
  else if (part == 1) cp_async_wait<2>();
  else if (part == 2) cp_async_wait<1>();
  else cp_async_wait<0>();
}
#endif
}  // namespace router_detail
}  // namespace dsv41k
