// runtime/gpu/stream_read_kernel.cu — the roofline's streaming-read kernel (`dsv41-rt bench`), compiled to PTX at build time (nvcc -ptx) and loaded by the driver, like exchange_kernels.cu.
//
// Thread t of the grid reads 16-byte vectors t, t + s, t + 2s, ... (s: the grid's threads), four loads
// in flight per iteration (ld.global.nc.v4 through __ldg), XOR-folding them so the loads are live; the
// fold is stored only when it equals a value a zeroed buffer never gives, so nothing is written.
extern "C" __global__ void dsv41_stream_read(const uint4* __restrict__ src, unsigned long long count,
                                             unsigned* __restrict__ out) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned fold = 0;
  for (; i + 3 * stride < count; i += 4 * stride) {
    const uint4 a = __ldg(src + i), b = __ldg(src + i + stride), c = __ldg(src + i + 2 * stride),
                d = __ldg(src + i + 3 * stride);
    fold ^= (a.x ^ a.y ^ a.z ^ a.w) ^ (b.x ^ b.y ^ b.z ^ b.w) ^ (c.x ^ c.y ^ c.z ^ c.w) ^ (d.x ^ d.y ^ d.z ^ d.w);
  }
  for (; i < count; i += stride) {
    const uint4 a = __ldg(src + i);
    fold ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (fold == 1592324109u) *out = fold;
}
