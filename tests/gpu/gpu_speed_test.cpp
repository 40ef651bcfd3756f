// tests/gpu/gpu_speed_test.cpp — the cost of reading weights in their stored formats: one release-size
// linear (in 5120, out 8192, 16 decode rows) with its weight as f32 (the layout every kernel read
// before weights stayed stored: the same loop), bf16, fp8_tile32 and, for the experts' layout,
// fp4_row32. Runs only with DSV41_GPU_BENCH=1 (a measurement, not a check; docs/perf.md records it).
#include <chrono>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "common/kernel_launch.h"
#include "compiler/kernels/kernel_build.h"
#include "tests/gpu/gpu_format_variants.h"
#include "tests/gpu/gpu_op_device.h"
#include "tests/gpu/gpu_op_plan.h"
#include "tests/gpu/gpu_op_values.h"

namespace dsv41::gpu_test {
namespace {

constexpr int64_t kIn = 5120, kOut = 8192, kRows = 16, kLaunches = 200;

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

TEST(GpuSpeed, LinearReadsItsWeightInEachStoredFormat) {
  if (!env_text("DSV41_GPU_BENCH")) GTEST_SKIP() << "a measurement: set DSV41_GPU_BENCH=1";
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  if (!s.device) GTEST_SKIP() << "needs the GPU";
  gpu::CudaDriver& d = *s.device->driver;
  Call call;
  call.op = "linear";
  call.constants = {{"in_features", kIn}, {"out_features", kOut}};
  call.args = {{"x", ArgKind::Scratch, {0}, 0}, {"w", ArgKind::Weight, {0}, 0}, {"out", ArgKind::Scratch, {1}, 0}};
  const BufferDecl x_decl{"x", DType::BF16, {kRows, kIn}, 0, kRows * kIn * 2},
      out_decl{"out", DType::F32, {kRows, kOut}, 0, kRows * kOut * 4};
  const std::vector<WeightFormat> formats = {WeightFormat::F32, WeightFormat::BF16, WeightFormat::FP8Tile32,
                                             WeightFormat::FP4Row32};
  auto compiled = compile_per_format(
      call, formats,
      [&](WeightFormat f) {
        CallEnv env;
        env.rows = kRows;
        env.buffer = [&](const Arg& a) { return a.ints[0] == 0 ? &x_decl : &out_decl; };
        env.weight_shape = [f](const Arg&) {
          return std::vector<int64_t>{kOut, f == WeightFormat::FP4Row32 ? kIn / 2 : kIn};
        };
        env.weight_format = [f](int64_t) -> std::optional<WeightFormat> { return f; };
        return env;
      },
      s.target.arch, (scratch_dir() / "speed-cache").string());
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
  const std::vector<KernelJob>& jobs = compiled->jobs;
  const std::vector<CallEnv>& envs = compiled->envs;
  const std::vector<CompiledKernel>& built = compiled->built;
  gpu::KernelLauncher launcher(d);
  Rng rng(7);
  std::vector<int32_t> statics;
  for (int64_t r = 0; r < kRows; ++r)
    statics.insert(statics.end(), {1, static_cast<int32_t>(r % 4), static_cast<int32_t>(r), 0});
  auto st = gpu::DeviceBuffer::from_host(d, statics.data(), statics.size() * 4);
  const std::vector<uint8_t> x_bytes = random_bytes(rng, x_decl.bytes, WeightFormat::BF16);
  auto x = gpu::DeviceBuffer::from_host(d, x_bytes.data(), x_bytes.size());
  auto out = gpu::DeviceBuffer::allocate(d, out_decl.bytes);
  ASSERT_TRUE(st.is_ok() && x.is_ok() && out.is_ok());
  for (size_t k = 0; k < formats.size(); ++k) {
    const WeightFormat f = formats[k];
    auto kernel = launcher.load(built[k].cubin, built[k].variant.entry, jobs[k].variant.key);
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
    const size_t bytes = f == WeightFormat::F32         ? kOut * kIn * 4
                         : f == WeightFormat::BF16      ? kOut * kIn * 2
                         : f == WeightFormat::FP8Tile32 ? kOut * kIn
                                                        : kOut * kIn / 2;
    const size_t scale_bytes = f == WeightFormat::FP8Tile32  ? (kOut / 32) * (kIn / 32)
                               : f == WeightFormat::FP4Row32 ? kOut * (kIn / 32)
                                                             : 0;
    const std::vector<uint8_t> w_bytes = random_bytes(rng, bytes, f);
    std::vector<uint8_t> s_bytes(scale_bytes);
    for (uint8_t& b : s_bytes) b = static_cast<uint8_t>(120 + rng.below(8));
    auto w = gpu::DeviceBuffer::from_host(d, w_bytes.data(), w_bytes.size());
    ASSERT_TRUE(w.is_ok());
    std::optional<gpu::DeviceBuffer> sc;
    if (scale_bytes) sc = std::move(gpu::DeviceBuffer::from_host(d, s_bytes.data(), s_bytes.size())).value();
    gpu::LaunchBindings b;
    b.rows = kRows;
    b.statics = st->ptr();
    b.scratch = {{"x", x->ptr()}, {"out", out->ptr()}};
    b.weights["w"] = {w->ptr(), sc ? sc->ptr() : 0};
    Call launched = call;
    auto dims = launch_dims(call, envs[k]);
    launched.launch.block = dims->block;
    std::copy(dims->grid, dims->grid + 3, launched.launch.grid);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(launcher.launch(*kernel, launched, envs[k], b).is_ok());  // warm-up
    ASSERT_TRUE(d.synchronize().is_ok());
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunches; ++i) ASSERT_TRUE(launcher.launch(*kernel, launched, envs[k], b).is_ok());
    ASSERT_TRUE(d.synchronize().is_ok());
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kLaunches;
    std::printf(
        "linear %lldx%lld, %lld rows, weight %-10s %9zu bytes (+%zu scales): %8.1f us a launch, %6.0f GB/s of weight\n",
        static_cast<long long>(kOut), static_cast<long long>(kIn), static_cast<long long>(kRows),
        std::string(weight_format_name(f)).c_str(), bytes, scale_bytes, us, (bytes + scale_bytes) / us / 1e3);
  }
}

}  // namespace
}  // namespace dsv41::gpu_test
