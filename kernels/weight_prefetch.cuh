// kernels/weight_prefetch.cuh — what a program kernel does before its griddepcontrol.wait: an L2
// prefetch of the weights it is about to stream, and the launch mode (early trigger, prefetch on or off).
//
// Every variant's generated wrapper (common/kernel_contract.cpp variant_source) includes this header and
// runs, under programmatic dependent launch (runtime/gpu/kernel_launcher.cpp):
//   trigger(kTriggerEntry); prefetch::<op>(...) if the op has a hook; griddepcontrol.wait;
//   trigger(kTriggerAfterWait); entry::<op>(...)
// A weight does not depend on the previous kernel, so its bytes may be asked for while that kernel still
// runs; everything else (activations, state, statics) is read only after the wait. The decode products
// are latency-bound (about 25% occupancy, DRAM at 12-41% of peak: docs/perf.md), so the streaming loads
// that follow the wait find their lines in L2 or already on the way.
//
// A hook is a function template in namespace dsv41k::prefetch named like its op. tools/kernel_contract
// reads its template parameters and parameters, each of which must be one of the entry's with the same
// name and type (a subset, in any order): the wrapper passes them by name. A hook touches no memory but
// its weights' (read-only for the whole program), writes nothing, and changes no result: the kernels'
// outputs are bit-identical with and without it (cuda_backend_tests' check mode).
//
// Only decode phases prefetch (rows ≤ kPrefetchRows): the prefill GEMMs are bound by tensor-core
// throughput and reuse each weight tile from L2 already.
#pragma once

#include "kernel_abi.cuh"

#ifndef DSV41_CONTRACT_SCAN
// The launch mode, set per module by the runtime after loading it (KernelLauncher::load, from
// DSV41_PDL_TRIGGER and DSV41_PDL_PREFETCH): the low two bits say where the kernel triggers its dependents,
// bit 2 turns the prefetch off. A __constant__ (one per module), so the variant's code is the same in
// every mode and one process can compare them; zero (no early trigger, prefetch on) when never set.
extern "C" {
__constant__ int dsv41_launch_mode = 0;
}
#endif

namespace dsv41k {
namespace pdl {

enum : int {
  kTriggerOff = 0,        // dependents launch as this grid's blocks exit (the implicit trigger)
  kTriggerEntry = 1,      // griddepcontrol.launch_dependents first thing, before the prefetch and the wait
  kTriggerAfterWait = 2,  // right after the wait: the next kernel prefetches while this one computes
  kTriggerMask = 3,
  kNoPrefetch = 4,
};
constexpr long long kPrefetchRows = 16;  // = common/kernel_contract.h kManyRowsAbove: decode phases only
constexpr long long kPieceBytes = 16384;  // one cp.async.bulk.prefetch: a few per block of a large weight

#ifndef DSV41_CONTRACT_SCAN
__device__ __forceinline__ void trigger(int when) {
  if ((dsv41_launch_mode & kTriggerMask) == when) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

__device__ __forceinline__ bool prefetching(Rows rows) {
  return rows <= kPrefetchRows && !(dsv41_launch_mode & kNoPrefetch);
}

// Asks L2 for this block's share of [p, p + bytes): the range split evenly over the whole grid, in
// 16-byte units (cp.async.bulk.prefetch's alignment and size unit), a piece a lane of warp 0. Device
// tensors start on 256-byte boundaries and are padded to them (common/weight_format.h), so the range
// rounded out to 16 bytes stays inside its allocation. Not inlined: inlined into linear's decode body it
// raised that body's registers from 64 to 74 (ptxas), a block an SM fewer; called, it leaves them as they were.
__device__ __noinline__ void l2_share(const void* p, long long bytes) {
  if (!p || bytes <= 0 || threadIdx.x >= 32) return;
  // 32-bit unit arithmetic (weights below 64 GB): 64-bit division would be a long SASS subroutine.
  const unsigned long long lo = reinterpret_cast<unsigned long long>(p) & ~15ull;
  const unsigned units = static_cast<unsigned>((reinterpret_cast<unsigned long long>(p) + bytes - lo + 15) / 16);
  const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned per = (units + blocks - 1) / blocks, first = block * per;
  const unsigned end = first + per < units ? first + per : units;
  constexpr unsigned kPiece = kPieceBytes / 16;
  for (unsigned u = first + threadIdx.x * kPiece; u < end; u += 32 * kPiece) {
    const unsigned n = end - u < kPiece ? end - u : kPiece;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(lo + 16ull * u), "r"(n * 16) : "memory");
  }
}

// A [rows, cols] weight in its stored format: its codes, then its scales (kernel_abi.cuh's formats).
template <int format>
__device__ __forceinline__ void weight(Weight w, long long rows, long long cols) {
  const long long code_bytes = format == WF_F32 ? rows * cols * 4
                               : format == WF_BF16 ? rows * cols * 2
                               : format == WF_FP4_ROW32 ? rows * cols / 2
                                                         : rows * cols;
  l2_share(w.data, code_bytes);
  if (format == WF_FP8_TILE32) l2_share(w.scales, (rows + 31) / 32 * ((cols + 31) / 32));
  if (format == WF_FP4_ROW32 || format == WF_FP8_ROW32) l2_share(w.scales, rows * ((cols + 31) / 32));
}
#endif

}  // namespace pdl

// ---- the hooks: the fixed weights of the decode ops (the routed experts' depend on the router's ids) ----
namespace prefetch {

template <long long in_features, int format_w>
__device__ __forceinline__ void linear(Rows rows, Weight w, Int out_features) {
#ifndef DSV41_CONTRACT_SCAN
  if (pdl::prefetching(rows)) pdl::weight<format_w>(w, out_features, in_features);
#endif
}

template <long long groups, long long in_per_group, long long out_per_group, int format_w>
__device__ __forceinline__ void grouped_linear(Rows rows, Weight w) {
#ifndef DSV41_CONTRACT_SCAN
  if (pdl::prefetching(rows)) pdl::weight<format_w>(w, groups * out_per_group, in_per_group);
#endif
}

template <long long hidden, long long width, int format_w1, int format_w3, int format_w2>
__device__ __forceinline__ void shared_expert(Rows rows, Weight w1, Weight w3, Weight w2) {
#ifndef DSV41_CONTRACT_SCAN
  if (!pdl::prefetching(rows)) return;
  pdl::weight<format_w1>(w1, width, hidden);
  pdl::weight<format_w3>(w3, width, hidden);
  pdl::weight<format_w2>(w2, hidden, width);
#endif
}

template <long long hidden, long long experts, int format_gate>
__device__ __forceinline__ void router(Rows rows, Weight gate) {
#ifndef DSV41_CONTRACT_SCAN
  if (pdl::prefetching(rows)) pdl::weight<format_gate>(gate, experts, hidden);
#endif
}

template <long long hidden, long long streams, int format_fn>
__device__ __forceinline__ void hc_mix(Rows rows, Weight fn) {
#ifndef DSV41_CONTRACT_SCAN
  if (pdl::prefetching(rows)) pdl::weight<format_fn>(fn, (2 + streams) * streams, streams * hidden);
#endif
}

}  // namespace prefetch
}  // namespace dsv41k
