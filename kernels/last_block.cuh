// kernels/last_block.cuh — the handoff of the decode kernels that split a row's (or an item's) work over
// blocks (hc_mix, router, gemv_kparts, the grouped experts' slices and job sets): each block writes its
// part to a table of its module, then counts itself on the row's or item's counter; the last block merges
// the parts.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
#ifndef DSV41_CONTRACT_SCAN
// Called by every thread of a block once its part is stored. Returns true, to every thread, in the last
// of the row's `blocks` blocks to arrive: that block sees every other block's part (read it through L2,
// __ldcg, never a stale L1 line) and has reset `finished` for the next launch. The fences order each
// block's part before its count, and the count before the last block's reads.
__device__ __forceinline__ bool last_block_of_row(unsigned* finished, unsigned blocks) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(finished, 1u) == blocks - 1;
  __syncthreads();
  if (!last) return false;
  __threadfence();
  if (threadIdx.x == 0) *finished = 0u;
  return true;
}
#endif
}  // namespace dsv41k
