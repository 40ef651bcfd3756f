// runtime/gpu/exchange_kernels.cu — the exchanges' rank-ordered sum (NCCL between rank processes, device copies between rank threads on one GPU), compiled to PTX at build time (nvcc -ptx) and loaded by the driver.
//
// Not in kernels/: those are the program's ops, compiled per variant by dsv41c. This one belongs to the
// runtime's exchange (like NCCL's own kernels): the same for every program, so it ships inside
// dsv41-rt as PTX, which the driver compiles for the device it finds (no NVRTC at run time).

// gathered: the all-gathered partials, world blocks of n floats in rank order. out[i] becomes
// ((g0[i] + g1[i]) + g2[i]) + ...: rank 0's value, then each rank's added in turn, every add rounded
// to F32 (no contraction), which is the CPU exchange's order and arithmetic (runtime/exchange.cpp), so
// every rank holds the same bits as the CPU backend given the same partials. `out` may be a block of
// `gathered`'s owner's x (not `gathered` itself).
extern "C" __global__ void dsv41_rank_ordered_sum(const float* __restrict__ gathered, float* __restrict__ out,
                                                  long long n, int world) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float total = gathered[i];
    for (int r = 1; r < world; ++r) total = __fadd_rn(total, gathered[r * n + i]);
    out[i] = total;
  }
}
