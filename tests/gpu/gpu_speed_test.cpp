// tests/gpu/gpu_speed_test.cpp — the linear kernels against the roofline: release-size linears (the
// attention projections, the output projection, the vocabulary head at worlds 1 and 4) at 1, 4, 8 and
// 16 decode rows with the weight in each stored format (the head: BF16, as stored), each timed in a CUDA
// graph over enough weight copies that they do not stay in L2 (launched without programmatic dependent
// launch: the kernel's own time), and compared with the device's read bandwidth measured by a
// streaming-read kernel in the same run.
// Runs only with DSV41_GPU_BENCH=1 (a measurement, not a check; docs/perf.md records it).
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "common/kernel_launch.h"
#include "compiler/kernels/kernel_build.h"
#include "runtime/gpu/programmatic_launch.h"
#include "tests/gpu/gpu_format_variants.h"
#include "tests/gpu/gpu_op_device.h"
#include "tests/gpu/gpu_op_plan.h"
#include "tests/gpu/gpu_op_values.h"
#include "tests/gpu/gpu_timing.h"

namespace dsv41::gpu_test {
namespace {

struct Shape {
  const char* what;
  int64_t in, out;
  bool bf16_only = false;  // the head: stored BF16 in every pack
};
// Release shapes at world 1: wq_a, wq_b, the output projection wo_b, a wide square-ish product, and the
// head (129280 vocabulary rows; a quarter at world 4); then the world-4 share's small grids, which ran at
// latency before split-K (32, 512 and 320 blocks at one row: docs/perf.md, branch dfp8): wkv, wq_b/4 and
// wo_b/4.
const std::vector<Shape> kShapes = {{"wq_a", 5120, 1280},          {"wq_b", 1280, 32768},
                                    {"wo_b", 8192, 5120},          {"5120x8192", 5120, 8192},
                                    {"head/4", 5120, 32320, true}, {"head", 5120, 129280, true},
                                    {"wkv", 5120, 512},            {"wq_b/4", 1280, 8192},
                                    {"wo_b/4", 2048, 5120}};
const std::vector<int64_t> kRowCounts = {1, 4, 8, 16};
constexpr size_t kBeyondL2 = size_t{512} << 20;  // the weight copies a graph cycles through
constexpr int kCallsPerGraph = 60;

std::vector<uint8_t> random_bytes(Rng& rng, size_t n, WeightFormat f) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) {
    uint8_t v = static_cast<uint8_t>(rng.next());
    if (f == WeightFormat::FP8Tile32 && (v & 0x7F) == 0x7F) v = 0x3F;  // no NaN codes
    b[i] = v;
  }
  if (f == WeightFormat::F32 || f == WeightFormat::BF16)  // small finite values: clear the top exponent bits
    for (size_t i = (f == WeightFormat::F32 ? 3 : 1); i < n; i += (f == WeightFormat::F32 ? 4 : 2)) b[i] &= 0x3F;
  return b;
}

size_t weight_bytes(WeightFormat f, int64_t out, int64_t in) {
  const size_t n = static_cast<size_t>(out) * in;
  return f == WeightFormat::F32 ? n * 4 : f == WeightFormat::BF16 ? n * 2 : f == WeightFormat::FP8Tile32 ? n : n / 2;
}
size_t scale_bytes(WeightFormat f, int64_t out, int64_t in) {
  return f == WeightFormat::FP8Tile32  ? static_cast<size_t>((out + 31) / 32) * ((in + 31) / 32)
         : f == WeightFormat::FP4Row32 ? static_cast<size_t>(out) * (in / 32)
                                       : 0;
}

TEST(GpuSpeed, LinearAgainstTheStreamingReadRoofline) {
  const BenchDevice b = bench_device();
  if (!b.skip.empty()) GTEST_SKIP() << b.skip;
  ASSERT_TRUE(b.error.empty()) << b.error;
  gpu::CudaDriver& d = *b.driver;
  const std::vector<WeightFormat> all_formats = {WeightFormat::BF16, WeightFormat::FP8Tile32, WeightFormat::FP4Row32};
  constexpr int64_t kMaxRows = 16;
  gpu::KernelLauncher launcher(d);
  gpu::set_programmatic_launch(false);
  Rng rng(7);
  std::vector<int32_t> statics;
  for (int64_t r = 0; r < kMaxRows; ++r)
    statics.insert(statics.end(), {1, static_cast<int32_t>(r % 4), static_cast<int32_t>(r), 0});
  auto st = gpu::DeviceBuffer::from_host(d, statics.data(), statics.size() * 4);
  ASSERT_TRUE(st.is_ok());
  for (const Shape& shape : kShapes) {
    const std::vector<WeightFormat> formats =
        shape.bf16_only ? std::vector<WeightFormat>{WeightFormat::BF16} : all_formats;
    Call call;
    call.op = "linear";
    call.constants = {{"in_features", shape.in}, {"out_features", shape.out}};
    call.args = {{"x", ArgKind::Scratch, {0}, 0}, {"w", ArgKind::Weight, {0}, 0}, {"out", ArgKind::Scratch, {1}, 0}};
    const BufferDecl x_decl{"x", DType::BF16, {kMaxRows, shape.in}, 0, static_cast<uint64_t>(kMaxRows * shape.in * 2)},
        out_decl{"out", DType::F32, {kMaxRows, shape.out}, 0, static_cast<uint64_t>(kMaxRows * shape.out * 4)};
    auto env_for = [&](WeightFormat f, int64_t rows) {
      CallEnv env;
      env.rows = rows;
      env.buffer = [&](const Arg& a) { return a.ints[0] == 0 ? &x_decl : &out_decl; };
      env.weight_shape = [f, shape](const Arg&) {
        return std::vector<int64_t>{shape.out, f == WeightFormat::FP4Row32 ? shape.in / 2 : shape.in};
      };
      env.weight_format = [f](int64_t) -> std::optional<WeightFormat> { return f; };
      return env;
    };
    auto compiled = compile_per_format(
        call, formats, [&](WeightFormat f) { return env_for(f, kMaxRows); }, b.arch,
        (scratch_dir() / "speed-cache").string());
    ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
    const std::vector<uint8_t> x_bytes = random_bytes(rng, x_decl.bytes, WeightFormat::BF16);
    auto x = gpu::DeviceBuffer::from_host(d, x_bytes.data(), x_bytes.size());
    auto out = gpu::DeviceBuffer::allocate(d, out_decl.bytes);
    ASSERT_TRUE(x.is_ok() && out.is_ok());
    for (size_t k = 0; k < formats.size(); ++k) {
      const WeightFormat f = formats[k];
      auto kernel =
          launcher.load(compiled->built[k].cubin, compiled->built[k].variant.entry, compiled->jobs[k].variant.key);
      ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
      const size_t wb = weight_bytes(f, shape.out, shape.in), sb = scale_bytes(f, shape.out, shape.in);
      const std::vector<uint8_t> w_bytes = random_bytes(rng, wb, f);
      std::vector<uint8_t> s_bytes(sb);
      for (uint8_t& v : s_bytes) v = static_cast<uint8_t>(120 + rng.below(8));
      // Copies of the weight so that a graph's calls read DRAM, not L2.
      const size_t copies = std::max<size_t>(2, std::min<size_t>(kCallsPerGraph, kBeyondL2 / (wb + sb) + 1));
      std::vector<gpu::DeviceBuffer> ws, ss;
      for (size_t c = 0; c < copies; ++c) {
        ws.push_back(std::move(gpu::DeviceBuffer::from_host(d, w_bytes.data(), wb)).value());
        if (sb) ss.push_back(std::move(gpu::DeviceBuffer::from_host(d, s_bytes.data(), sb)).value());
      }
      for (int64_t rows : kRowCounts) {
        std::vector<gpu::LaunchBindings> bindings(copies);
        for (size_t c = 0; c < copies; ++c) {
          bindings[c].rows = rows;
          bindings[c].statics = st->ptr();
          bindings[c].scratch = {{"x", x->ptr()}, {"out", out->ptr()}};
          bindings[c].weights["w"] = {ws[c].ptr(), sb ? ss[c].ptr() : 0};
        }
        auto us = time_call(d, launcher, *kernel, call, env_for(f, rows), bindings, kCallsPerGraph, 7);
        ASSERT_TRUE(us.is_ok()) << us.status().message();
        const double gbps = (wb + sb) / *us / 1e3;
        std::printf("linear %-9s %5lldx%-5lld %2lld rows  %-10s %9zu B: %8.2f us  %6.0f GB/s  %5.1f%% of roofline\n",
                    shape.what, static_cast<long long>(shape.out), static_cast<long long>(shape.in),
                    static_cast<long long>(rows), std::string(weight_format_name(f)).c_str(), wb + sb, *us, gbps,
                    100.0 * gbps / b.roof_gbps);
      }
    }
  }
}

}  // namespace
}  // namespace dsv41::gpu_test
