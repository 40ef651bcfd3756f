// tests/gpu/gpu_decode_test.cpp — every stored code of every weight format, decoded by a real kernel
// (embed copies table rows, so its output is weight_at's value) and compared bit for bit with the CPU
// backend's dequantize: all 65536 bf16 codes, all 256 e4m3 codes and all 16 e2m1 nibbles (both
// halves of all 256 bytes), each under UE8M0 scales from 2^-127 (subnormal products) to 2^128 (inf).
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "common/kernel_launch.h"
#include "common/numeric_formats.h"
#include "compiler/kernels/kernel_build.h"
#include "tests/gpu/gpu_format_variants.h"
#include "tests/gpu/gpu_op_device.h"
#include "tests/gpu/gpu_op_plan.h"

namespace dsv41::gpu_test {
namespace {

constexpr int64_t kRows = 256, kHidden = 256;

struct Table {
  WeightFormat format;
  Encoding encoding;
  DType dtype;
  std::vector<uint8_t> stored, scales;
};

// Scale bytes cycling through the edges and a band around 2^0.
uint8_t scale_byte(int64_t i) {
  static const uint8_t edges[] = {0, 1, 2, 100, 126, 127, 128, 140, 200, 253, 254, 255};
  return i % 3 == 0 ? edges[(i / 3) % 12] : static_cast<uint8_t>(107 + (i * 7) % 41);
}

Table make_table(WeightFormat format) {
  Table t{format, Encoding::BF16, DType::BF16, {}, {}};
  switch (format) {
    case WeightFormat::BF16:  // row r, column c holds code r·256 + c: every bf16 code once
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t c = 0; c < kHidden; ++c) {
          const uint16_t code = static_cast<uint16_t>(r * 256 + c);
          t.stored.push_back(static_cast<uint8_t>(code & 0xFF));
          t.stored.push_back(static_cast<uint8_t>(code >> 8));
        }
      break;
    case WeightFormat::FP8Tile32:
    case WeightFormat::FP8Row32: {
      t.encoding = format == WeightFormat::FP8Tile32 ? Encoding::FP8Block : Encoding::FP8Rows;
      t.dtype = DType::F8_E4M3;
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t c = 0; c < kHidden; ++c) t.stored.push_back(static_cast<uint8_t>((r + c) & 0xFF));
      const int64_t n = format == WeightFormat::FP8Tile32 ? (kRows / 32) * (kHidden / 32) : kRows * (kHidden / 32);
      for (int64_t i = 0; i < n; ++i) t.scales.push_back(scale_byte(i));
      break;
    }
    case WeightFormat::FP4Row32:
      t.encoding = Encoding::FP4Rows;
      t.dtype = DType::I8;
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t c = 0; c < kHidden / 2; ++c) t.stored.push_back(static_cast<uint8_t>((r * 3 + c) & 0xFF));
      for (int64_t i = 0; i < kRows * (kHidden / 32); ++i) t.scales.push_back(scale_byte(i));
      break;
    default:
      break;
  }
  return t;
}

bool same_bits(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

TEST(GpuDecode, EveryStoredCodeDecodesToTheCpuBits) {
  GpuSetup s = gpu_setup();
  if (!s.skip.empty()) GTEST_SKIP() << s.skip;
  if (!s.device) GTEST_SKIP() << "needs the GPU (DSV41_GPU_DRY)";
  gpu::CudaDriver& d = *s.device->driver;
  const std::vector<WeightFormat> formats = {WeightFormat::BF16, WeightFormat::FP8Tile32, WeightFormat::FP4Row32,
                                             WeightFormat::FP8Row32};
  // One embed call per format: statics rows r = token r, every row active.
  Call call;
  call.op = "embed";
  call.constants = {{"hidden", kHidden}, {"streams", 1}};
  call.args = {
      {"statics", ArgKind::Statics, {}, 0}, {"table", ArgKind::Weight, {0}, 0}, {"out", ArgKind::Scratch, {0}, 0}};
  const BufferDecl out_decl{"out", DType::F32, {kRows, kHidden}, 0, kRows * kHidden * 4};
  auto compiled = compile_per_format(
      call, formats,
      [&](WeightFormat f) {
        CallEnv env;
        env.rows = kRows;
        env.buffer = [&out_decl](const Arg&) { return &out_decl; };
        env.weight_shape = [f](const Arg&) {
          return std::vector<int64_t>{kRows, f == WeightFormat::FP4Row32 ? kHidden / 2 : kHidden};
        };
        env.weight_format = [f](int64_t) -> std::optional<WeightFormat> { return f; };
        return env;
      },
      s.target.arch, (scratch_dir() / "decode-cache").string());
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
  const std::vector<KernelJob>& jobs = compiled->jobs;
  const std::vector<CallEnv>& envs = compiled->envs;
  const std::vector<CompiledKernel>& built = compiled->built;
  gpu::KernelLauncher launcher(d);
  std::vector<int32_t> statics;
  for (int64_t r = 0; r < kRows; ++r)
    statics.insert(statics.end(), {static_cast<int32_t>(r), 0, 0, static_cast<int32_t>(r)});
  int64_t values_checked = 0;
  for (size_t k = 0; k < formats.size(); ++k) {
    SCOPED_TRACE(jobs[k].variant.key);
    auto kernel = launcher.load(built[k].cubin, built[k].variant.entry, jobs[k].variant.key);
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
    const Table t = make_table(formats[k]);
    std::vector<float> expected(kRows * kHidden);
    dequantize(t.encoding, t.dtype, t.stored.data(), t.scales.data(), kRows, kHidden, expected.data());
    auto table = gpu::DeviceBuffer::from_host(d, t.stored.data(), t.stored.size());
    ASSERT_TRUE(table.is_ok()) << table.status().message();
    std::optional<gpu::DeviceBuffer> scales;
    if (!t.scales.empty()) {
      auto sb = gpu::DeviceBuffer::from_host(d, t.scales.data(), t.scales.size());
      ASSERT_TRUE(sb.is_ok()) << sb.status().message();
      scales = std::move(sb).value();
    }
    auto st = gpu::DeviceBuffer::from_host(d, statics.data(), statics.size() * 4);
    auto out = gpu::DeviceBuffer::allocate(d, out_decl.bytes);
    auto errors = gpu::DeviceBuffer::allocate(d, 4);
    ASSERT_TRUE(st.is_ok() && out.is_ok() && errors.is_ok());
    ASSERT_TRUE(out->fill(0xFF).is_ok() && errors->fill(0).is_ok());
    gpu::LaunchBindings b;
    b.rows = kRows;
    b.statics = st->ptr();
    b.errors = errors->ptr();
    b.scratch["out"] = out->ptr();
    b.weights["table"] = {table->ptr(), scales ? scales->ptr() : 0};
    Call launched = call;
    auto dims = launch_dims(call, envs[k]);
    ASSERT_TRUE(dims.is_ok());
    launched.launch.block = dims->block;
    std::copy(dims->grid, dims->grid + 3, launched.launch.grid);
    ASSERT_TRUE(launcher.launch(*kernel, launched, envs[k], b).is_ok());
    ASSERT_TRUE(d.synchronize().is_ok());
    std::vector<float> got(kRows * kHidden);
    int32_t error_word = -1;
    ASSERT_TRUE(out->download(got.data(), got.size() * 4).is_ok());
    ASSERT_TRUE(errors->download(&error_word, 4).is_ok());
    EXPECT_EQ(error_word, 0);
    int mismatches = 0;
    for (int64_t i = 0; i < kRows * kHidden && mismatches < 8; ++i)
      if (!same_bits(got[i], expected[i])) {
        ++mismatches;
        ADD_FAILURE() << "row " << i / kHidden << ", column " << i % kHidden << ": GPU " << got[i] << ", CPU "
                      << expected[i];
      }
    values_checked += kRows * kHidden;
  }
  EXPECT_EQ(values_checked, 4 * kRows * kHidden);
  std::printf("decoded %lld stored values in %zu formats, bit-identical to the CPU's dequantize\n",
              static_cast<long long>(values_checked), formats.size());
}

}  // namespace
}  // namespace dsv41::gpu_test
