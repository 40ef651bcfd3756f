// kernels/cp_async.cuh — asynchronous 16-byte copies from global into shared memory (sm_80+ cp.async,
// through L2 only), committed in groups and waited for by the count of groups still allowed in flight.
// Shared by the router's gate rows (kernels/router.cuh), the GEMM tile's operands (kernels/gemm_tile.cuh) and
// the prefill attention's key tiles (kernels/sparse_attention_prefill.cuh).
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
#ifndef DSV41_CONTRACT_SCAN

__device__ __forceinline__ void cp_async16(void* shared, const void* global) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N of this thread's committed groups are still in flight (its own copies only: a
// block barrier must follow before other threads read them).
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

#endif  // DSV41_CONTRACT_SCAN
}  // namespace dsv41k
