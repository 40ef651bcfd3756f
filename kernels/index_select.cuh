// kernels/index_select.cuh — the indexer's top-k (docs/ops.md "index_select"): scores
// I[s] = Σ_h w_h·max(0, iq_h·k_s) over the visible index entries, optional candidate blocks (mode 1
// writes them, mode 2 masks by them), then the best min(K, n) entries (higher score, then lower index;
// NaN counts as −∞; −∞ entries dropped) in ascending index order, padded with −1. Mirrors
// runtime/cpu/ops_indexer.cpp: each dot is the CPU's eight-way dot and the head sum runs in head order,
// so the scores (and the integer outputs) are the CPU's bit for bit.
//
// Launch (common/kernel_launch_attention.cpp): grid (R, 1, 1), one block of 256 threads per row.
// Dynamic shared memory: 4·C (the scores, C = index_cache_rows, the capacity) plus, for the blocks
// nbC = ceil(C / cand_block_size), 4·nbC (mode 1: block scores) or nbC rounded up to 4 bytes (mode 2:
// kept flags). Static shared memory: 4·Hi·(ceil32(Di) + 8) (the row's queries) + 4·Hi + 256 bytes.
// Scores: warp w takes entries w, w+8, ...; lane = 8·h' + k computes partial sum k of head 4g + h'.
// Top-k: a 32-pass bitwise search for the k-th key (floats mapped to ordered integers), then a
// block scan that keeps the ties of lowest index and compacts the chosen indices in order.
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace index_select_detail {
constexpr int kThreads = 256;
// Query rows in shared memory are padded to ≡ 8 (mod 32) floats: the four heads a warp reads at once
// fall in distinct banks.
__device__ constexpr long long q_stride(long long di) { return (di + 31) / 32 * 32 + 8; }
__device__ constexpr long long static_shared_bytes(long long hi, long long di) { return 4 * hi * q_stride(di) + 4 * hi + 256; }
// Dynamic shared memory of a capacity of `entries` index rows.
__device__ constexpr long long dynamic_shared_bytes(long long entries, long long mode, long long block) {
  const long long nb = mode == 0 ? 0 : (entries + block - 1) / block;
  return 4 * entries + (mode == 1 ? 4 * nb : mode == 2 ? (nb + 3) / 4 * 4 : 0);
}

#ifndef DSV41_CONTRACT_SCAN
__device__ __forceinline__ unsigned ordered_key(float v) {
  if (v == 0.0f) v = 0.0f;  // −0 and +0 tie, as in the CPU's comparisons
  const unsigned b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// Exclusive prefix of a 0/1 flag over the block (thread order); `total` gets the block's count.
// `sh` holds 32 ints.
__device__ __forceinline__ int block_flag_scan(bool flag, int* sh, int& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const unsigned ballot = __ballot_sync(0xffffffffu, flag);
  __syncthreads();  // sh may still be read by a previous scan
  if (lane == 0) sh[warp] = __popc(ballot);
  __syncthreads();
  int before = 0;
  total = 0;
  for (int w = 0; w < warps; ++w) {
    const int c = sh[w];
    if (w < warp) before += c;
    total += c;
  }
  return before + __popc(ballot & ((1u << lane) - 1u));
}

__device__ __forceinline__ int block_int_sum(int v, int* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  int total = 0;
  for (int w = 0; w < warps; ++w) total += sh[w];
  return total;
}

// The best `count` of vals[0, n) (higher value, then lower index; no NaN among them) in ascending
// index order into out[0 ..), without those equal to −∞ when drop_neg_inf; out[.. out_len) padded with −1.
__device__ __forceinline__ void select_ascending(const float* vals, int n, int count, bool drop_neg_inf, int* out,
                                                 int out_len, int* sh) {
  const bool all = count >= n;
  unsigned threshold = 0;
  if (!all && count > 0) {
    // The largest T with #{key ≥ T} ≥ count: the count-th key.
    for (int bit = 31; bit >= 0; --bit) {
      const unsigned cand = threshold | (1u << bit);
      int c = 0;
      for (int i = threadIdx.x; i < n; i += blockDim.x) c += ordered_key(vals[i]) >= cand;
      if (block_int_sum(c, sh) >= count) threshold = cand;
    }
  }
  int above = 0;  // #{key > T}
  if (!all && count > 0) {
    int c = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) c += ordered_key(vals[i]) > threshold;
    above = block_int_sum(c, sh);
  }
  const int ties_needed = count - above;
  int eq_carry = 0, out_carry = 0;
  if (count > 0) {
    for (int base = 0; base < n; base += blockDim.x) {
      const int i = base + threadIdx.x;
      const bool in = i < n;
      const float v = in ? vals[i] : 0.0f;
      const unsigned key = in ? ordered_key(v) : 0u;
      const bool gt = in && (all || key > threshold);
      const bool eq = in && !all && key == threshold;
      int eq_total = 0;
      const int eq_rank = eq_carry + block_flag_scan(eq, sh, eq_total);
      const bool chosen = gt || (eq && eq_rank < ties_needed);
      const bool keep = chosen && !(drop_neg_inf && v == -__int_as_float(0x7f800000));
      int keep_total = 0;
      const int pos = out_carry + block_flag_scan(keep, sh, keep_total);
      if (keep && pos < out_len) out[pos] = i;
      eq_carry += eq_total;
      out_carry += keep_total;
    }
  }
  for (int i = out_carry + threadIdx.x; i < out_len; i += blockDim.x) out[i] = -1;
  __syncthreads();
}
#endif  // DSV41_CONTRACT_SCAN
}  // namespace index_select_detail

namespace entry {

template <long long index_heads, long long index_head_dim, long long ratio, long long topk, long long mode,
          long long cand_blocks, long long cand_block_size, int dtype_index_cache>
__device__ __forceinline__ void index_select(Rows rows, Statics statics, Errors errors, Scratch iq, Scratch iw,
                                             State index_cache, Int index_cache_rows, Scratch candidates,
                                             Scratch out) {
#ifndef DSV41_CONTRACT_SCAN
  static_assert(index_heads >= 1 && index_heads <= 1024, "index_heads out of range");
  static_assert(index_head_dim >= 1 && index_head_dim <= 1024, "index_head_dim out of range");
  static_assert(index_select_detail::static_shared_bytes(index_heads, index_head_dim) <= 40 * 1024,
                "the row's queries must fit static shared memory");
  static_assert(ratio >= 1 && ratio <= (1 << 16), "ratio out of range");
  static_assert(topk >= 0 && topk <= (1 << 24), "topk out of range");
  static_assert(mode >= 0 && mode <= 2, "mode is 0, 1 or 2");
  static_assert(mode == 0 || (cand_blocks >= 1 && cand_blocks <= (1 << 24) && cand_block_size >= 1 &&
                              cand_block_size <= (1 << 24)),
                "candidate constants out of range");
  static_assert(dtype_index_cache == DT_F32 || dtype_index_cache == DT_BF16, "index_cache is an act buffer");
  using namespace index_select_detail;
  constexpr int Hi = static_cast<int>(index_heads), Di = static_cast<int>(index_head_dim);
  constexpr int QS = static_cast<int>(q_stride(index_head_dim));
  constexpr int NJ = Di / 8;  // full chunks of 8 of one dot
  constexpr int K = static_cast<int>(topk);
  constexpr long long CB = mode == 0 ? 1 : cand_blocks, B = mode == 0 ? 1 : cand_block_size;
  const float kInf = __int_as_float(0x7f800000);
  __shared__ float q[Hi * QS];
  __shared__ float w[Hi];
  __shared__ int sh[64];
  extern __shared__ float dyn[];
  float* score = dyn;

  const long long r = blockIdx.x;
  if (r >= rows) return;
  int* outr = static_cast<int*>(out) + r * K;
  int* candr = mode != 0 ? static_cast<int*>(candidates) + r * CB : nullptr;
  const int slot = row_slot(statics, r);
  if (slot < 0) {
    for (int i = threadIdx.x; i < K; i += blockDim.x) outr[i] = 0;
    if constexpr (mode == 1)
      for (int i = threadIdx.x; i < CB; i += blockDim.x) candr[i] = 0;
    return;
  }
  const long long p = row_position(statics, r);
  const long long n_long = p < 0 ? -1 : (p + 1) / ratio;
  if (n_long < 0 || n_long > index_cache_rows) {
    if (threadIdx.x == 0) report_error(errors, n_long < 0 ? ERR_STATICS : ERR_CAPACITY);
    for (int i = threadIdx.x; i < K; i += blockDim.x) outr[i] = -1;
    if constexpr (mode == 1)
      for (int i = threadIdx.x; i < CB; i += blockDim.x) candr[i] = -1;
    return;
  }
  const int n = static_cast<int>(n_long);

  // The row's queries and head weights w_h = iw_h·Di^−½·Hi^−½ (fp32, in that order).
  const float* iqr = static_cast<const float*>(iq) + r * Hi * Di;
  for (int i = threadIdx.x; i < Hi * Di; i += blockDim.x) q[(i / Di) * QS + i % Di] = iqr[i];
  if (threadIdx.x < 32) {
    const float factor_dim = static_cast<float>(1.0 / sqrt(static_cast<double>(Di)));
    const float factor_heads = static_cast<float>(1.0 / sqrt(static_cast<double>(Hi)));
    for (int h = threadIdx.x; h < Hi; h += 32)
      w[h] = __fmul_rn(__fmul_rn(static_cast<const float*>(iw)[r * Hi + h], factor_dim), factor_heads);
  }
  __syncthreads();

  // Scores.
  const char* keys = slot_base(index_cache, slot);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const int hsub = lane >> 3, k8 = lane & 7;
  for (int s = warp; s < n; s += warps) {
    const long long key0 = static_cast<long long>(s) * Di;
    float kreg[NJ > 0 ? NJ : 1];
#pragma unroll
    for (int j = 0; j < NJ; ++j) kreg[j] = load<dtype_index_cache>(keys, key0 + k8 + 8 * j);
    float acc_score = 0.0f;
    for (int g = 0; g < (Hi + 3) / 4; ++g) {
      const int h = 4 * g + hsub;
      const float* qh = q + (h < Hi ? h : 0) * QS;
      float acc = 0.0f;
#pragma unroll
      for (int j = 0; j < NJ; ++j) acc = __fadd_rn(acc, __fmul_rn(qh[k8 + 8 * j], kreg[j]));
      acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 1));
      acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 2));
      acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 4));
      if constexpr (Di % 8 != 0) {
        float tail = 0.0f;
        for (int i = NJ * 8; i < Di; ++i) tail = __fadd_rn(tail, __fmul_rn(qh[i], load<dtype_index_cache>(keys, key0 + i)));
        acc = __fadd_rn(acc, tail);
      }
      const float relu = 0.0f < acc ? acc : 0.0f;  // std::max(0.0f, dot): NaN gives 0
      const float term = h < Hi ? __fmul_rn(w[h], relu) : 0.0f;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const float v = __shfl_sync(0xffffffffu, term, 8 * t);
        if (4 * g + t < Hi) acc_score = __fadd_rn(acc_score, v);
      }
    }
    if (lane == 0) score[s] = acc_score != acc_score ? -kInf : acc_score;
  }
  __syncthreads();

  if constexpr (mode == 1) {
    float* best = dyn + index_cache_rows;
    const int nb = static_cast<int>((n + B - 1) / B);
    for (int b = threadIdx.x; b < nb; b += blockDim.x) {
      float m = -kInf;
      const long long end = (b + 1) * B < n ? (b + 1) * B : n;
      for (long long s = b * B; s < end; ++s) m = m < score[s] ? score[s] : m;
      best[b] = b == nb - 1 ? kInf : m;  // the newest block is always kept
    }
    __syncthreads();
    select_ascending(best, nb, nb < CB ? nb : static_cast<int>(CB), false, candr, static_cast<int>(CB), sh);
  } else if constexpr (mode == 2) {
    unsigned char* kept = reinterpret_cast<unsigned char*>(dyn + index_cache_rows);
    const int nb = static_cast<int>((n + B - 1) / B);
    for (int b = threadIdx.x; b < nb; b += blockDim.x) kept[b] = 0;
    __syncthreads();
    for (int c = threadIdx.x; c < CB; c += blockDim.x) {
      const int b = candr[c];
      if (b < -1) report_error(errors, ERR_SELECTION);
      else if (b >= 0 && b < nb) kept[b] = 1;
    }
    __syncthreads();
    for (int s = threadIdx.x; s < n; s += blockDim.x)
      if (!kept[s / B]) score[s] = -kInf;
    __syncthreads();
  }
  select_ascending(score, n, n < K ? n : K, true, outr, K, sh);
#endif
}

}  // namespace entry
}  // namespace dsv41k
