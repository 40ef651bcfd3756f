// tests/gpu/gpu_moe_speed_test.cpp — the experts against the roofline: moe_experts at the release's expert
// shape (hidden 5120, width 2304, top-6) over the bench fixture's 64 experts, and shared_expert at the same
// shape, at 1, 8 and 16 decode rows, weights FP4 (experts) / FP8 (shared) as the release stores them and
// BF16. Every call of a graph routes its rows to fresh random experts, so the bytes counted (every
// distinct expert a call selects, its three matrices and their scales) come from DRAM, not L2.
// Runs only with DSV41_GPU_BENCH=1 (a measurement, not a check; docs/perf.md records it).
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "common/kernel_launch.h"
#include "tests/gpu/gpu_format_variants.h"
#include "tests/gpu/gpu_op_device.h"
#include "tests/gpu/gpu_op_plan.h"
#include "tests/gpu/gpu_op_values.h"
#include "tests/gpu/gpu_timing.h"

namespace dsv41::gpu_test {
namespace {

constexpr int64_t kHidden = 5120, kWidth = 2304, kExperts = 64, kTopk = 6, kMaxRows = 16;
constexpr int kCalls = 40;
const std::vector<int64_t> kRowCounts = {1, 8, 16};

size_t matrix_bytes(WeightFormat f, int64_t rows, int64_t cols) {
  const size_t n = static_cast<size_t>(rows) * cols;
  return f == WeightFormat::BF16 ? 2 * n : f == WeightFormat::FP4Row32 ? n / 2 : n;
}
size_t matrix_scale_bytes(WeightFormat f, int64_t rows, int64_t cols) {
  return f == WeightFormat::FP4Row32    ? static_cast<size_t>(rows) * (cols / 32)
         : f == WeightFormat::FP8Tile32 ? static_cast<size_t>((rows + 31) / 32) * ((cols + 31) / 32)
                                        : 0;
}

// One expert's three matrices on the device (w1, w3: [F, D]; w2: [D, F]), random valid codes.
struct Expert {
  gpu::DeviceBuffer data[3], scales[3];
};

std::vector<uint8_t> codes(Rng& rng, size_t n, WeightFormat f) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(rng.next());
  if (f == WeightFormat::BF16)
    for (size_t i = 1; i < n; i += 2) b[i] &= 0x3F;  // small finite values
  if (f == WeightFormat::FP8Tile32)
    for (uint8_t& v : b)
      if ((v & 0x7F) == 0x7F) v = 0x3F;  // no NaN codes
  return b;
}

// Times one op ("moe_experts" or "shared_expert") in format f at each row count.
void bench(gpu::CudaDriver& d, const std::string& arch, double roof, const std::string& op, WeightFormat f) {
  const bool routed = op == "moe_experts";
  const int64_t experts = routed ? kExperts : 1;
  Call call;
  call.op = op;
  call.constants = {{"hidden", kHidden}, {"width", kWidth}};
  if (routed) call.constants.insert(call.constants.end(), {{"experts", kExperts}, {"topk", kTopk}});
  std::vector<int64_t> w1_ids(experts), w3_ids(experts), w2_ids(experts);
  std::iota(w1_ids.begin(), w1_ids.end(), 0);
  std::iota(w3_ids.begin(), w3_ids.end(), experts);
  std::iota(w2_ids.begin(), w2_ids.end(), 2 * experts);
  const ArgKind wk = routed ? ArgKind::WeightList : ArgKind::Weight;
  call.args = {{"x", ArgKind::Scratch, {0}, 0}};
  if (routed)
    call.args.insert(call.args.end(), {{"ids", ArgKind::Scratch, {1}, 0}, {"weights", ArgKind::Scratch, {2}, 0}});
  call.args.insert(call.args.end(), {{"w1", wk, routed ? w1_ids : std::vector<int64_t>{0}, 0},
                                     {"w3", wk, routed ? w3_ids : std::vector<int64_t>{1}, 0},
                                     {"w2", wk, routed ? w2_ids : std::vector<int64_t>{2}, 0},
                                     {"limit", ArgKind::Float, {}, 10.0},
                                     {"out", ArgKind::Scratch, {3}, 0},
                                     {"work", ArgKind::Scratch, {4}, 0}});
  const BufferDecl decls[5] = {
      {"x", DType::BF16, {kMaxRows, kHidden}, 0, static_cast<uint64_t>(kMaxRows * kHidden * 2)},
      {"ids", DType::I32, {kMaxRows, kTopk}, 0, static_cast<uint64_t>(kMaxRows * kTopk * 4)},
      {"weights", DType::F32, {kMaxRows, kTopk}, 0, static_cast<uint64_t>(kMaxRows * kTopk * 4)},
      {"out", DType::F32, {kMaxRows, kHidden}, 0, static_cast<uint64_t>(kMaxRows * kHidden * 4)},
      {"work", DType::BF16, {kMaxRows, kTopk * (kWidth + 2)}, 0,
       static_cast<uint64_t>(kMaxRows * kTopk * (kWidth + 2) * 2)}};
  const int64_t stored_d = f == WeightFormat::FP4Row32 ? kHidden / 2 : kHidden;
  const int64_t stored_f = f == WeightFormat::FP4Row32 ? kWidth / 2 : kWidth;
  auto env_for = [&](int64_t rows) {
    CallEnv env;
    env.rows = rows;
    env.buffer = [&decls](const Arg& a) { return &decls[a.ints[0]]; };
    env.weight_shape = [&](const Arg& a) {
      return a.name == "w2" ? std::vector<int64_t>{kHidden, stored_f} : std::vector<int64_t>{kWidth, stored_d};
    };
    env.weight_format = [f](int64_t) -> std::optional<WeightFormat> { return f; };
    return env;
  };
  auto compiled = compile_per_format(
      call, {f}, [&](WeightFormat) { return env_for(kMaxRows); }, arch, (scratch_dir() / "speed-cache").string());
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
  gpu::KernelLauncher launcher(d);
  auto kernel =
      launcher.load(compiled->built[0].cubin, compiled->built[0].variant.entry, compiled->jobs[0].variant.key);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();

  Rng rng(11);
  const size_t mb[3] = {matrix_bytes(f, kWidth, kHidden), matrix_bytes(f, kWidth, kHidden),
                        matrix_bytes(f, kHidden, kWidth)};
  const size_t sb[3] = {matrix_scale_bytes(f, kWidth, kHidden), matrix_scale_bytes(f, kWidth, kHidden),
                        matrix_scale_bytes(f, kHidden, kWidth)};
  const size_t expert_bytes = mb[0] + mb[1] + mb[2] + sb[0] + sb[1] + sb[2];
  std::vector<uint8_t> host_codes[3], host_scales[3];
  for (int m = 0; m < 3; ++m) {
    host_codes[m] = codes(rng, mb[m], f);
    host_scales[m].resize(sb[m]);
    for (uint8_t& b : host_scales[m]) b = static_cast<uint8_t>(120 + rng.below(8));
  }
  std::vector<Expert> ex(experts);
  std::vector<gpu::DeviceWeight> lists[3];
  for (auto& e : ex)
    for (int m = 0; m < 3; ++m) {
      e.data[m] = std::move(gpu::DeviceBuffer::from_host(d, host_codes[m].data(), mb[m])).value();
      if (sb[m]) e.scales[m] = std::move(gpu::DeviceBuffer::from_host(d, host_scales[m].data(), sb[m])).value();
      lists[m].push_back({e.data[m].ptr(), sb[m] ? e.scales[m].ptr() : 0});
    }
  gpu::DeviceBuffer list_buf[3];
  for (int m = 0; m < 3; ++m)
    list_buf[m] =
        std::move(gpu::DeviceBuffer::from_host(d, lists[m].data(), lists[m].size() * sizeof(gpu::DeviceWeight)))
            .value();
  std::vector<uint8_t> x_bytes = codes(rng, decls[0].bytes, WeightFormat::BF16);
  auto x = gpu::DeviceBuffer::from_host(d, x_bytes.data(), x_bytes.size());
  auto out = gpu::DeviceBuffer::allocate(d, decls[3].bytes);
  auto work = gpu::DeviceBuffer::allocate(d, decls[4].bytes);
  std::vector<int32_t> statics;
  for (int64_t r = 0; r < kMaxRows; ++r)
    statics.insert(statics.end(), {1, static_cast<int32_t>(r), static_cast<int32_t>(r), 0});
  auto st = gpu::DeviceBuffer::from_host(d, statics.data(), statics.size() * 4);
  ASSERT_TRUE(x.is_ok() && out.is_ok() && work.is_ok() && st.is_ok());

  for (int64_t rows : kRowCounts) {
    // Fresh routing for every call: distinct experts within a row, random across rows and calls.
    std::vector<int32_t> ids(kCalls * kMaxRows * kTopk);
    std::vector<float> weights(ids.size(), 1.0f / kTopk);
    size_t bytes = 0;
    for (int c = 0; c < kCalls; ++c) {
      std::set<int32_t> distinct;
      for (int64_t r = 0; r < kMaxRows; ++r) {
        std::vector<int32_t> all(kExperts);
        std::iota(all.begin(), all.end(), 0);
        for (int64_t k = 0; k < kTopk; ++k) {
          std::swap(all[k], all[k + rng.below(kExperts - k)]);
          ids[(c * kMaxRows + r) * kTopk + k] = all[k];
          if (r < rows) distinct.insert(all[k]);
        }
      }
      bytes += routed ? distinct.size() * expert_bytes : expert_bytes;
    }
    auto id_buf = gpu::DeviceBuffer::from_host(d, ids.data(), ids.size() * 4);
    auto w_buf = gpu::DeviceBuffer::from_host(d, weights.data(), weights.size() * 4);
    ASSERT_TRUE(id_buf.is_ok() && w_buf.is_ok());
    std::vector<gpu::LaunchBindings> b(kCalls);
    for (int c = 0; c < kCalls; ++c) {
      b[c].rows = rows;
      b[c].statics = st->ptr();
      b[c].scratch = {{"x", x->ptr()}, {"out", out->ptr()}, {"work", work->ptr()}};
      if (routed) {
        b[c].scratch["ids"] = id_buf->ptr() + static_cast<size_t>(c) * kMaxRows * kTopk * 4;
        b[c].scratch["weights"] = w_buf->ptr() + static_cast<size_t>(c) * kMaxRows * kTopk * 4;
        b[c].weight_lists = {{"w1", list_buf[0].ptr()}, {"w3", list_buf[1].ptr()}, {"w2", list_buf[2].ptr()}};
      } else {
        b[c].weights = {{"w1", lists[0][0]}, {"w3", lists[1][0]}, {"w2", lists[2][0]}};
      }
    }
    auto us = time_call(d, launcher, *kernel, call, env_for(rows), b, kCalls, 5);
    ASSERT_TRUE(us.is_ok()) << us.status().message();
    const double per_call = static_cast<double>(bytes) / kCalls, gbps = per_call / *us / 1e3;
    std::printf("%-13s %2lld rows  %-10s %10.0f B a call: %8.2f us  %6.0f GB/s  %5.1f%% of roofline\n", op.c_str(),
                static_cast<long long>(rows), std::string(weight_format_name(f)).c_str(), per_call, *us, gbps,
                100.0 * gbps / roof);
  }
}

TEST(GpuSpeed, ExpertsAgainstTheStreamingReadRoofline) {
  const BenchDevice b = bench_device();
  if (!b.skip.empty()) GTEST_SKIP() << b.skip;
  ASSERT_TRUE(b.error.empty()) << b.error;
  gpu::CudaDriver& d = *b.driver;
  bench(d, b.arch, b.roof_gbps, "moe_experts", WeightFormat::FP4Row32);
  bench(d, b.arch, b.roof_gbps, "moe_experts", WeightFormat::BF16);
  bench(d, b.arch, b.roof_gbps, "shared_expert", WeightFormat::FP8Tile32);
  bench(d, b.arch, b.roof_gbps, "shared_expert", WeightFormat::BF16);
}

}  // namespace
}  // namespace dsv41::gpu_test
