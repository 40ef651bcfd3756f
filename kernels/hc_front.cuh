// kernels/hc_front.cuh — a sublayer's hyper-connection front in one launch (docs/ops.md "hc_front"): hc_mix of x
// into out (this sublayer's mix) and hc_collapse_norm of x with prev_mix (the previous sublayer's mix, whose
// pre the collapse uses: docs/model.md §5) into normed. The two read the same x and neither reads what the
// other writes, so their blocks run side by side: the collapse's short blocks under the mix's handoff and
// Sinkhorn tail, one launch a sublayer instead of two.
//
// Launch (common/kernel_launch_hc.cpp): block 512 threads, grid (R, G, 2): blocks z = 0 are hc_mix's grid
// (R, G) and blocks z = 1 hc_collapse_norm's with the same G (it takes any split); G is hc_mix's rule. The
// mix's blocks come first in the grid, so they start first. Each half keeps its own kernel's order and
// rounding (kernels/hc_mix.cuh, kernels/hc_collapse_norm.cuh): the outputs are theirs, bits included.
// No dynamic shared memory.
#pragma once

#include "hc_collapse_norm.cuh"
#include "hc_mix.cuh"

namespace dsv41k {
namespace entry {

template <long long hidden, long long streams, long long sinkhorn_iters, int dtype_x, int format_fn, int format_base,
          int format_scale, int format_norm, int dtype_normed>
__device__ __forceinline__ void hc_front(Rows rows, Statics statics, Scratch x, Weight fn, Weight base, Weight scale,
                                         Real eps, Real hc_eps, Scratch out, Scratch prev_mix, Weight norm,
                                         Scratch normed) {
#ifndef DSV41_CONTRACT_SCAN
  const int g = static_cast<int>(blockIdx.y), G = static_cast<int>(gridDim.y);
  if (blockIdx.z == 0)
    hc_mix_detail::mix_blocks<hidden, streams, sinkhorn_iters, dtype_x, format_fn, format_base, format_scale>(
        rows, statics, x, fn, base, scale, eps, hc_eps, out, g, G);
  else
    hc_collapse_norm_detail::collapse_blocks<hidden, streams, dtype_x, format_norm, dtype_normed>(
        rows, statics, x, prev_mix, norm, eps, normed, g, G);
#endif
}

}  // namespace entry
}  // namespace dsv41k
