// kernels/kernel_abi.cuh — what every kernel shares: the parameter types that form the kernel contract,
// dtype codes, bf16 loads and stores, the error word, and block reductions.
//
// Compiled only by NVRTC (the compiler embeds kernels/ and hands NVRTC one variant at a time), and
// parsed by tools/kernel_contract (libclang) with DSV41_CONTRACT_SCAN defined: that scan reads each
// entry's template parameters and parameter list (docs/kernels.md), so the typedef names below are
// the contract's vocabulary and must not be spelled differently in an entry.
#pragma once

#ifdef DSV41_CONTRACT_SCAN
// Host-only parse: the declarations matter, bodies may be approximate.
#define __device__
#define __global__
#define __shared__
#define __forceinline__ inline
#define __launch_bounds__(...)
struct dsv41k_dim3 { unsigned x, y, z; };
extern dsv41k_dim3 threadIdx, blockIdx, blockDim, gridDim;
#endif

namespace dsv41k {

// ---- parameter types: the contract (common/kernel_contract.h maps each to what the runtime passes) ----
typedef long long Rows;                // the phase's row count R (every buffer argument is [R, ...])
typedef long long Int;                 // a call's Int argument, a call constant passed at run time, or
                                       // <arg>_rows: the first dimension of a weight or state argument
typedef float Real;                    // a call's Float argument
typedef const int* Statics;            // int32 [R, 4]: token, slot, position, first row
typedef void* Scratch;                 // a scratch buffer; its dtype is the template parameter dtype_<name>
struct State {                         // a per-slot state buffer: slot s's copy is at base + s * slot_stride
  char* base;
  long long slot_stride;
  long long slots;                     // copies allocated: a statics slot at or above it is refused
};
struct Weight {                        // a weight in its stored format (format_<arg>), the rank's local share:
  const void* data;                    // the stored codes, row-major [rows, stored cols]
  const unsigned char* scales;         // its UE8M0 scales (null for WF_F32 / WF_BF16)
};
typedef const Weight* WeightList;      // device array of Weight (e.g. every expert's w1), one format
typedef const long long* IntList;      // device array of run-time integers
typedef int* Errors;                   // this call's error word (0: fine); see report_error

// ---- dtype codes of template parameters named dtype_<arg> ----
// DT_PACKED: a cache state buffer (U8) packed in the official format of its role (common/cache_format.h):
// a ring row is e4m3 codes then UE8M0 scales per 32, a compressed row e2m1 codes then E4M3 scales per
// 16, an index key e2m1 codes then UE8M0 scales per 32 (kernels/cache_rows.cuh reads and writes them).
enum : int { DT_F32 = 0, DT_BF16 = 1, DT_I32 = 2, DT_PACKED = 3 };

// ---- weight format codes of template parameters named format_<arg> (common/weight_format.h) ----
enum : int {
  WF_F32 = 0,         // fp32 values
  WF_BF16 = 1,        // bf16 values
  WF_FP8_TILE32 = 2,  // e4m3 codes [rows, cols], UE8M0 scales [ceil(rows/32), ceil(cols/32)] (32x32 tiles)
  WF_FP4_ROW32 = 3,   // e2m1 two a byte, low nibble first [rows, cols/2], UE8M0 [rows, cols/32]
  WF_FP8_ROW32 = 4,   // e4m3 codes [rows, cols], UE8M0 [rows, cols/32]
};

// Error codes a kernel reports instead of touching memory out of bounds (the runtime names the call).
enum : int {
  ERR_TOKEN = 1,       // a token outside the embedding table
  ERR_EXPERT = 2,      // an expert id outside [0, E)
  ERR_CAPACITY = 3,    // a cache entry beyond the state buffer's rows
  ERR_SELECTION = 4,   // a selected entry or candidate block out of range
  ERR_STATICS = 5,     // inconsistent statics (first row, slot, positions)
};

#ifndef DSV41_CONTRACT_SCAN

__device__ __forceinline__ void report_error(Errors errors, int code) {
  if (errors) atomicCAS(errors, 0, code);
}

__device__ __forceinline__ float bf16_bits_to_float(unsigned short b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}
// Round to nearest even, NaN kept quiet: the same bits as common/numeric_formats.cpp's f32_to_bf16.
__device__ __forceinline__ unsigned short float_to_bf16_bits(float v) {
  unsigned b = __float_as_uint(v);
  if (v != v) return static_cast<unsigned short>((b >> 16) | 0x40);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<unsigned short>(b >> 16);
}
__device__ __forceinline__ float bf16_round(float v) { return bf16_bits_to_float(float_to_bf16_bits(v)); }

// ---- weights dequantized in registers: the same bits as common/numeric_formats.cpp's dequantize ----
__device__ __forceinline__ float e4m3_to_float(unsigned b) {
  const unsigned sign = (b & 0x80u) << 24, e = (b >> 3) & 0xFu, m = b & 7u;
  if ((b & 0x7Fu) == 0x7Fu) return __int_as_float(0x7fc00000);  // e4m3fn's only NaN codes
  if (e == 0) return __uint_as_float(sign | __float_as_uint(__fmul_rn(static_cast<float>(m), 0x1p-9f)));
  return __uint_as_float(sign | ((e + 120u) << 23) | (m << 20));
}
// 2^(b-127): 0 is the subnormal 2^-127; 255 is NaN, as the OCP MX specification defines (and the CPU decodes).
__device__ __forceinline__ float e8m0_to_float(unsigned b) {
  return b == 0 ? __uint_as_float(0x00400000u) : b == 255u ? __uint_as_float(0x7fc00000u) : __uint_as_float(b << 23);
}
__device__ __forceinline__ float e2m1_to_float(unsigned nibble) {
  // Magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6}: exponent and mantissa bits map straight onto fp32.
  const unsigned e = (nibble >> 1) & 3u, m = nibble & 1u;
  const float magnitude = e == 0 ? (m ? 0.5f : 0.0f) : __uint_as_float(((e + 126u) << 23) | (m << 22));
  return (nibble & 8u) ? -magnitude : magnitude;
}

// The index of the UE8M0 scale of element (row, col) of a weight matrix of FMT with `cols` logical
// columns: one per 32x32 tile (FP8_TILE32), one per 32 consecutive elements of a row (FP4_ROW32: cols is
// a multiple of 32) or of the flat matrix (FP8_ROW32). The one formula of the decoders that take scales.
template <int FMT>
__device__ __forceinline__ long long scale_index(long long row, long long col, long long cols) {
  static_assert(FMT == WF_FP8_TILE32 || FMT == WF_FP4_ROW32 || FMT == WF_FP8_ROW32, "a format with scales");
  if constexpr (FMT == WF_FP8_TILE32) return (row >> 5) * ((cols + 31) >> 5) + (col >> 5);
  else if constexpr (FMT == WF_FP4_ROW32) return row * (cols >> 5) + (col >> 5);
  else return (row * cols + col) >> 5;
}

// Element (row, col) of a weight matrix of FMT with `cols` logical columns, as fp32: code × scale,
// one rounding (exact unless the product is subnormal, as on the CPU).
template <int FMT>
__device__ __forceinline__ float weight_at(Weight w, long long row, long long col, long long cols) {
  static_assert(FMT >= WF_F32 && FMT <= WF_FP8_ROW32, "unknown weight format");
  const long long i = row * cols + col;
  if constexpr (FMT == WF_F32) {
    return static_cast<const float*>(w.data)[i];
  } else if constexpr (FMT == WF_BF16) {
    return bf16_bits_to_float(static_cast<const unsigned short*>(w.data)[i]);
  } else if constexpr (FMT == WF_FP8_TILE32) {
    const float code = e4m3_to_float(static_cast<const unsigned char*>(w.data)[i]);
    return __fmul_rn(code, e8m0_to_float(w.scales[scale_index<FMT>(row, col, cols)]));
  } else if constexpr (FMT == WF_FP4_ROW32) {
    const unsigned byte = static_cast<const unsigned char*>(w.data)[i >> 1];  // cols is even: i's parity is col's
    return __fmul_rn(e2m1_to_float((col & 1) ? byte >> 4 : byte & 15u), e8m0_to_float(w.scales[scale_index<FMT>(row, col, cols)]));
  } else {
    const float code = e4m3_to_float(static_cast<const unsigned char*>(w.data)[i]);
    return __fmul_rn(code, e8m0_to_float(w.scales[scale_index<FMT>(row, col, cols)]));
  }
}
// FP8 elements col0 .. col0 + 3 of one row from one 4-byte load of their codes and one scale (4
// never cross a 32-element scale block). Needs cols and col0 multiples of 4 (the row start is then
// 4-byte aligned: device tensors are 256-aligned). Same bits as weight_at.
constexpr int kFp8Vector = 4;
template <int FMT>
__device__ __forceinline__ void fp8_weight_vec(Weight w, long long row, long long col0, long long cols, float* v) {
  static_assert(FMT == WF_FP8_TILE32 || FMT == WF_FP8_ROW32, "fp8_weight_vec reads FP8 codes");
  const long long i = row * cols + col0;
  const unsigned q = *reinterpret_cast<const unsigned*>(static_cast<const unsigned char*>(w.data) + i);
  const float s = e8m0_to_float(w.scales[scale_index<FMT>(row, col0, cols)]);
#pragma unroll
  for (int k = 0; k < kFp8Vector; ++k) v[k] = __fmul_rn(e4m3_to_float((q >> (8 * k)) & 0xFFu), s);
}

// Element i of a weight vector (or a row-major matrix read flat): unscaled formats only.
template <int FMT>
__device__ __forceinline__ float weight_at(Weight w, long long i) {
  static_assert(FMT == WF_F32 || FMT == WF_BF16, "a flat index reads F32 or BF16 weights only");
  return weight_at<FMT>(w, 0, i, 0);
}

// Row `row`, columns col0 .. col0 + 3 (col0 a multiple of 4) as fp32, the same bits as weight_at.
// kVector (cols % 4 == 0) makes the four values one aligned load for F32, BF16 and FP8 (device tensors
// are 256-aligned); FP4 and an unaligned row read them one at a time.
template <int FMT, bool kVector>
__device__ __forceinline__ void weight_vec4(Weight w, long long row, long long col0, long long cols, float* v) {
  const long long i = row * cols + col0;
  if constexpr (kVector && FMT == WF_BF16) {
    const uint2 q = __ldg(reinterpret_cast<const uint2*>(static_cast<const unsigned short*>(w.data) + i));
    v[0] = __uint_as_float(q.x << 16);  // little-endian: the lower address is the low half
    v[1] = __uint_as_float(q.x & 0xFFFF0000u);
    v[2] = __uint_as_float(q.y << 16);
    v[3] = __uint_as_float(q.y & 0xFFFF0000u);
  } else if constexpr (kVector && FMT == WF_F32) {
    const float4 q = __ldg(reinterpret_cast<const float4*>(static_cast<const float*>(w.data) + i));
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
  } else if constexpr (kVector && (FMT == WF_FP8_TILE32 || FMT == WF_FP8_ROW32)) {
    static_assert(kFp8Vector == 4, "an FP8 vector is the four values");
    fp8_weight_vec<FMT>(w, row, col0, cols, v);
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = weight_at<FMT>(w, row, col0 + k, cols);
  }
}

// Element i of a float buffer of dtype DT (F32 or BF16) as fp32.
template <int DT>
__device__ __forceinline__ float load(const void* p, long long i) {
  static_assert(DT == DT_F32 || DT == DT_BF16, "float buffers are F32 or BF16");
  if constexpr (DT == DT_F32) return static_cast<const float*>(p)[i];
  else return bf16_bits_to_float(static_cast<const unsigned short*>(p)[i]);
}
// Stores v; a BF16 buffer rounds (docs/ops.md: the output dtype decides the rounding).
template <int DT>
__device__ __forceinline__ void store(void* p, long long i, float v) {
  static_assert(DT == DT_F32 || DT == DT_BF16, "float buffers are F32 or BF16");
  if constexpr (DT == DT_F32) static_cast<float*>(p)[i] = v;
  else static_cast<unsigned short*>(p)[i] = float_to_bf16_bits(v);
}
// b(v) applied exactly when the op's activations are BF16 (a rounding point that is not a store).
template <int DT>
__device__ __forceinline__ float round_as(float v) {
  if constexpr (DT == DT_BF16) return bf16_round(v);
  else return v;
}

__device__ __forceinline__ char* slot_base(const State& s, int slot) { return s.base + slot * s.slot_stride; }
// A statics slot every given state buffer holds (the runtime writes the statics, but a kernel never
// trusts an index it did not compute). Absent optional buffers (null base) do not limit.
__device__ __forceinline__ bool slot_in(int slot, const State& s) { return !s.base || slot < s.slots; }

// Statics of row r.
__device__ __forceinline__ int row_token(Statics s, long long r) { return s[r * 4 + 0]; }
__device__ __forceinline__ int row_slot(Statics s, long long r) { return s[r * 4 + 1]; }
__device__ __forceinline__ int row_position(Statics s, long long r) { return s[r * 4 + 2]; }
__device__ __forceinline__ int row_first(Statics s, long long r) { return s[r * 4 + 3]; }

// Block-wide sum / max of one value per thread; every thread gets the result. `scratch` holds 32
// floats of shared memory; blockDim.x is a multiple of 32, at most 1024.
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(v);
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : -__int_as_float(0x7f800000);
  return warp_max(v);
}

// The CPU's eight-way dot (runtime/cpu/ops_common.cpp dot) over one aligned group of 8 lanes: lane
// k sums a(i)·b(i) for i ≡ k (mod 8) below n rounded down to 8, the butterfly reproduces
// ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)), and the tail is added last, so the result has the CPU's bits
// (no fused multiply-add). Every lane of the warp must call it.
template <class A, class B>
__device__ __forceinline__ float group8_dot(A a, B b, long long n, int k) {
  const long long n8 = n & ~7ll;
  float acc = 0.0f;
  for (long long i = k; i < n8; i += 8) acc = __fadd_rn(acc, __fmul_rn(a(i), b(i)));
  acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 1));
  acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 2));
  acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, 4));
  float tail = 0.0f;
  for (long long i = n8; i < n; ++i) tail = __fadd_rn(tail, __fmul_rn(a(i), b(i)));
  return __fadd_rn(acc, tail);
}

#endif  // DSV41_CONTRACT_SCAN

}  // namespace dsv41k
