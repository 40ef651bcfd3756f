// kernels/rope.cuh — RoPE of every head of a row (docs/ops.md "rope", docs/model.md §3): rotates the
// last rope_dim dims of each head_dim-wide head at the row's position p, in GPT-J interleaved pairs
// (inverse = 1: by −θ); the other dims pass through. For an active row,
//   e = v[o + 2i], f = v[o + 2i + 1], θ = ±p·freq_i (fp64), c = (float)cos θ, s = (float)sin θ,
//   v'[o + 2i] = e·c − f·s,  v'[o + 2i + 1] = f·c + e·s   (fp32 products, no fused multiply-add),
// with o = head_dim − rope_dim; the store to a BF16 `out` rounds. Inactive rows get zeros. `out` may
// be `x` (each element, or pair, is read and written by the same thread).
//
// The frequencies are computed in the kernel in fp64 exactly as runtime/cpu/rope_math.cpp does:
// freq_i = theta^((−2·i)/rope_dim), blended with YaRN when yarn_factor > 1 and yarn_original > 0
// (ramp bounds from corr(t) = rope_dim·ln(Lo/(2π·t)) / (2·ln theta), floor/ceil, the hi == lo nudge).
// The RoPE Float arguments arrive as fp32 (the Real of kernels/kernel_abi.cuh) and are widened to fp64.
//
// Launch (common/kernel_launch_rows.cpp): block 256 threads, grid (R, ceil(heads / HB)): block (r, g)
// takes heads g·HB .. g·HB + HB − 1 of row r (heads_per_block(): about 2048 elements a block). Threads
// 0 .. rope_dim/2 − 1 of every block compute the row's cos/sin table in static shared memory (the
// same bits in each block). With head_dim and O even (the model's shapes) a thread takes whole
// pairs, kPairs of them, all loaded before the table is computed and any is stored (so the loads are
// in flight together and behind the table's fp64 chain; `out` may be `x`), and an in-place call
// stores only the rotated pairs; other shapes stride over the elements one at a time. No dynamic shared memory. A negative position of an active row reports
// ERR_STATICS (the CPU op refuses it); the row is still rotated (nothing is indexed by the position).
#pragma once

#include "kernel_abi.cuh"

namespace dsv41k {
namespace rope_detail {
constexpr int kThreads = 256;
constexpr long long kBlockElements = 2048;  // elements a block takes, about (whole heads)
__device__ constexpr long long heads_per_block(long long head_dim) {
  return head_dim >= kBlockElements ? 1 : kBlockElements / head_dim;
}

// freq_i of docs/model.md §3 in fp64, as runtime/cpu/rope_math.cpp's rope_frequencies.
__device__ __forceinline__ double frequency(long long i, long long rope_dim, double theta, double yarn_factor,
                                            long long yarn_original, double beta_fast, double beta_slow) {
  const double freq = pow(theta, __ddiv_rn(-2.0 * static_cast<double>(i), static_cast<double>(rope_dim)));
  if (!(yarn_factor > 1.0 && yarn_original > 0)) return freq;
  const double dim = static_cast<double>(rope_dim), original = static_cast<double>(yarn_original);
  const double pi = 3.141592653589793238462643383279502884;  // std::numbers::pi
  const double log_base2 = 2.0 * log(theta);
  const double corr_fast = __ddiv_rn(dim * log(__ddiv_rn(original, (2.0 * pi) * beta_fast)), log_base2);
  const double corr_slow = __ddiv_rn(dim * log(__ddiv_rn(original, (2.0 * pi) * beta_slow)), log_base2);
  const double lo = fmax(floor(corr_fast), 0.0);
  double hi = fmin(ceil(corr_slow), dim - 1.0);
  if (hi == lo) hi = lo + 0.001;
  double t = __ddiv_rn(static_cast<double>(i) - lo, hi - lo);
  t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);  // std::clamp (a NaN t stays NaN)
  return __dadd_rn(__dmul_rn(freq, 1.0 - t), __dmul_rn(__ddiv_rn(freq, yarn_factor), t));
}

// The fp32 cos and sin of angle ±position·freq_i (fp64 angle), as rope_math.cpp's rope_rotate.
__device__ __forceinline__ void angle_cos_sin(double freq, long long position, bool inverse, float& c, float& s) {
  const double angle = (inverse ? -1.0 : 1.0) * static_cast<double>(position) * freq;
  double sd, cd;
  sincos(angle, &sd, &cd);
  c = static_cast<float>(cd);
  s = static_cast<float>(sd);
}

// The RoPE arguments of an op that rotates inside (rmsnorm_rope, sparse_attention), and entry i
// (< rope_dim/2) of a row's table at `position`: cos and sin of ±position·freq_i (− when `inverse`), as fp32.
struct RopeArgs {
  Real theta, yarn_factor;
  Int yarn_original;
  Real beta_fast, beta_slow;
};
__device__ __forceinline__ void table_entry(const RopeArgs& a, long long rope_dim, int i, long long position,
                                            float* cs, float* sn, bool inverse = false) {
  const double freq = frequency(i, rope_dim, static_cast<double>(a.theta), static_cast<double>(a.yarn_factor),
                                a.yarn_original, static_cast<double>(a.beta_fast), static_cast<double>(a.beta_slow));
  angle_cos_sin(freq, position, inverse, cs[i], sn[i]);
}

// One interleaved pair rotated in fp32 without fused multiply-add.
__device__ __forceinline__ void rotate_pair(float e, float f, float c, float s, float& out0, float& out1) {
  out0 = __fsub_rn(__fmul_rn(e, c), __fmul_rn(f, s));
  out1 = __fadd_rn(__fmul_rn(f, c), __fmul_rn(e, s));
}
}  // namespace rope_detail

namespace entry {

template <long long heads, long long head_dim, long long rope_dim, long long inverse, int dtype_x, int dtype_out>
__device__ __forceinline__ void rope(Rows rows, Statics statics, Scratch x, Scratch out, Real theta, Real yarn_factor,
                                     Int yarn_original, Real beta_fast, Real beta_slow, Errors errors) {
  static_assert(heads >= 1 && heads <= (1 << 20), "heads out of range");
  static_assert(head_dim >= 1 && head_dim <= (1 << 20), "head_dim out of range");
  static_assert(heads * head_dim <= (1ll << 31), "row width out of range");
  static_assert(rope_dim >= 0 && rope_dim <= head_dim && rope_dim % 2 == 0, "rope_dim must be even and fit the head");
  static_assert(rope_dim / 2 <= rope_detail::kThreads, "rope_dim too large for one pass of the block");
  static_assert(inverse == 0 || inverse == 1, "inverse is 0 or 1");
  static_assert(dtype_x == DT_F32 || dtype_x == DT_BF16, "x is F32 or BF16");
  static_assert(dtype_out == DT_F32 || dtype_out == DT_BF16, "out is F32 or BF16");
  constexpr int T = rope_detail::kThreads;
  constexpr long long P = rope_dim / 2, O = head_dim - rope_dim, W = heads * head_dim;
  constexpr long long HB = rope_detail::heads_per_block(head_dim);
  constexpr long long BW = HB * head_dim;                                   // elements of a full block
  constexpr bool kPairwise = head_dim % 2 == 0 && O % 2 == 0 && BW / 2 <= 16 * T;
  constexpr int kPairs = static_cast<int>(kPairwise ? (BW / 2 + T - 1) / T : 1);  // pairs a thread takes
  __shared__ float cs[P > 0 ? P : 1], sn[P > 0 ? P : 1];
  const long long r = blockIdx.x;
  if (r >= rows) return;
  const int tid = threadIdx.x;
  const long long h0 = static_cast<long long>(blockIdx.y) * HB;
  if (h0 >= heads) return;
  const long long off = r * W + h0 * head_dim;                              // this block's first element
  const long long n = (heads - h0 < HB ? heads - h0 : HB) * head_dim;      // and its element count
  if (row_slot(statics, r) < 0) {
    for (long long e = tid; e < n; e += T) store<dtype_out>(out, off + e, 0.0f);
    return;
  }
  const long long position = row_position(statics, r);
  if (position < 0 && tid == 0 && blockIdx.y == 0) report_error(errors, ERR_STATICS);
  // The row's cos/sin table: a chain of fp64 operations (about 2 µs), so the pairwise path issues its
  // loads first and the table's latency hides behind theirs.
  auto table = [&] {
    if (tid < P)
      rope_detail::table_entry({theta, yarn_factor, yarn_original, beta_fast, beta_slow}, rope_dim, tid, position, cs,
                               sn, inverse == 1);
    __syncthreads();
  };
  if constexpr (kPairwise) {
    // Pair u holds elements 2u, 2u + 1 of the block; a pair is rotated (k ≥ O) or passed through whole.
    const bool in_place = dtype_x == dtype_out && x == out;
    float a[kPairs], b[kPairs];
#pragma unroll
    for (int j = 0; j < kPairs; ++j) {
      const long long e = 2 * (tid + static_cast<long long>(j) * T);
      const bool pass = e % head_dim < O;
      if (e < n && !(pass && in_place)) {
        a[j] = load<dtype_x>(x, off + e);
        b[j] = load<dtype_x>(x, off + e + 1);
      }
    }
    table();
#pragma unroll
    for (int j = 0; j < kPairs; ++j) {
      const long long e = 2 * (tid + static_cast<long long>(j) * T), k = e % head_dim;
      if (e >= n) continue;
      if (k < O) {
        if (in_place) continue;
        store<dtype_out>(out, off + e, a[j]);
        store<dtype_out>(out, off + e + 1, b[j]);
      } else {
        const long long i = (k - O) >> 1;
        float c0, c1;
        rope_detail::rotate_pair(a[j], b[j], cs[i], sn[i], c0, c1);
        store<dtype_out>(out, off + e, c0);
        store<dtype_out>(out, off + e + 1, c1);
      }
    }
  } else {
    table();
    for (long long e = tid; e < n; e += T) {
      const long long k = e % head_dim;  // off is a whole head
      if (k < O) {
        store<dtype_out>(out, off + e, load<dtype_x>(x, off + e));
      } else if (((k - O) & 1) == 0) {
        const long long i = (k - O) >> 1;
        float c0, c1;
        rope_detail::rotate_pair(load<dtype_x>(x, off + e), load<dtype_x>(x, off + e + 1), cs[i], sn[i], c0, c1);
        store<dtype_out>(out, off + e, c0);
        store<dtype_out>(out, off + e + 1, c1);
      }
    }
  }
}

}  // namespace entry
}  // namespace dsv41k
