// tests/gpu/gpu_attention_speed_test.cpp — sparse_attention and index_select at the release world-4
// rank-0 share's shapes (16 heads of 512, window 128, 512 selected; the indexer's 32 heads of 128 over
// a context of 65536), bf16 and official cache formats, timed in CUDA graphs of repeated calls.
// sparse_attention: the calls of decode.r1, r8, r16 and the largest prefill segment on the op test's
// random inputs (tests/gpu/gpu_op_inputs.h) moved to a full load (every active row's position raised
// so that its sequence ends near position 60000, every selected slot listed), timed with the planned
// launch and with every other head group G and split count S the kernel takes (it reads both from its
// grid), so the launch policy of common/kernel_launch_attention.cpp can be checked against the best.
// index_select: the decode calls as the op test generates them (positions random; printed). A second
// test sweeps the bench fixture's world-1 program (64 heads) the same way, bf16 caches only.
// Runs only with DSV41_GPU_BENCH=1 (a measurement, not a check; docs/perf.md records it).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include <gtest/gtest.h>

#include "common/hashing.h"
#include "tests/gpu/gpu_op_device.h"
#include "tests/gpu/gpu_op_inputs.h"
#include "tests/gpu/gpu_op_plan.h"
#include "tests/gpu/gpu_op_values.h"
#include "tests/gpu/gpu_timing.h"

namespace dsv41::gpu_test {
namespace {

constexpr int kReplays = 5;
constexpr int64_t kFullPosition = 60000;  // where the raised sequences end
const std::set<int64_t> kDecodeRows = {1, 8, 16};
const std::set<std::string> kOps = {"sparse_attention", "index_select"};

// Raises every active row's position (sequences keep their consecutive positions) so the last ends at
// kFullPosition, and lists K entries for every active row of sparse_attention (repeats allowed: the op
// does not deduplicate), all below the row's visible entries.
void load_fully(const CallSite& site, CallInputs& in) {
  std::vector<int32_t>& st = in.image.statics;
  int32_t top = 0;
  for (size_t r = 0; r * 4 < st.size(); ++r)
    if (st[r * 4 + 1] >= 0) top = std::max(top, st[r * 4 + 2]);
  const int32_t delta = static_cast<int32_t>(std::max<int64_t>(0, kFullPosition - top));
  for (size_t r = 0; r * 4 < st.size(); ++r)
    if (st[r * 4 + 1] >= 0) st[r * 4 + 2] += delta;
  const Arg* sel = site.call->find_arg("selected");
  const Arg* cache = site.call->find_arg("cache");
  if (!sel || !cache) return;
  const int64_t topk = site.call->constant("topk");
  const int64_t capacity = site.lists->state_buffers.at(cache->ints[0]).shape.at(0);
  auto ratio_it = site.cache_ratio.find(cache->ints[0]);
  const int64_t ratio = ratio_it == site.cache_ratio.end() ? 1 : ratio_it->second;
  std::vector<uint8_t>& bytes = in.image.scratch.at(sel->ints[0]);
  for (size_t r = 0; r * 4 < st.size(); ++r) {
    if (st[r * 4 + 1] < 0) continue;
    const int64_t visible = std::min<int64_t>((st[r * 4 + 2] + 1) / ratio, capacity);
    for (int64_t k = 0; k < topk; ++k) {
      const auto e = static_cast<int32_t>((k * 7919 + static_cast<int64_t>(r) * 104729) % visible);
      std::memcpy(bytes.data() + 4 * (r * topk + k), &e, 4);
    }
  }
}

// Times `call` launched with grid (R, ⌈H/g⌉, s) and the dynamic shared memory that g needs
// (kernels/sparse_attention.cuh); the eager launch before it must report no error.
Result<double> time_attention(gpu::CudaDriver& d, gpu::KernelLauncher& launcher, int32_t kernel, const CallSite& site,
                              DeviceCall& up, int64_t g, int64_t s, int count) {
  Call launched = *site.call;
  const int64_t heads = launched.constant("heads"), dp = (launched.constant("head_dim") + 7) / 8 * 8;
  launched.launch.grid[1] = (heads + g - 1) / g;
  launched.launch.grid[2] = s;
  launched.launch.dynamic_shared = 4 * (32 * (dp + 4) + g * dp);
  const CallEnv env = call_env(site);
  DSV41_TRY(up.errors->fill(0));
  DSV41_TRY(launcher.launch(kernel, launched, env, up.bindings));
  DSV41_TRY(d.synchronize());
  int32_t error_word = -1;
  DSV41_TRY(up.errors->download(&error_word, 4));
  if (error_word != 0) return Status::errorf("G {} S {}: error {}", g, s, error_code_name(error_word));
  return time_per_call(d, count, kReplays, [&](int, CUstream stream) {
    return launcher.launch(kernel, launched, env, up.bindings, stream);
  });
}

void sweep_attention(gpu::CudaDriver& d, gpu::KernelLauncher& launcher, int32_t kernel, const CallSite& site,
                     DeviceCall& up, const char* format) {
  const Call& call = *site.call;
  const int64_t rows = site.phase->rows, heads = call.constant("heads");
  const int64_t tiles = (call.constant("window") + call.constant("topk") + 31) / 32;
  const int count = rows > 16 ? 3 : 20;
  auto planned = time_attention(d, launcher, kernel, site, up, (heads + call.launch.grid[1] - 1) / call.launch.grid[1],
                                call.launch.grid[2], count);
  ASSERT_TRUE(planned.is_ok()) << planned.status().message();
  std::printf("sparse_attention %-6s %4lld rows topk %3lld: planned grid (%lld, %lld, %lld) %9.2f us\n", format,
              static_cast<long long>(rows), static_cast<long long>(call.constant("topk")),
              static_cast<long long>(call.launch.grid[0]), static_cast<long long>(call.launch.grid[1]),
              static_cast<long long>(call.launch.grid[2]), *planned);
  if (rows > 16) return;  // prefill: one split (the kernel's partial arrays hold decode phases)
  std::string line;
  for (int64_t g : {1, 2, 4, 8}) {
    if (g > heads) continue;
    line += fmt::format("    G {}:", g);
    for (int64_t s : {1, 2, 4, 7, 10, 16, 20}) {
      if (s > tiles || (s > 1 && rows * heads * s > 4096)) continue;
      auto us = time_attention(d, launcher, kernel, site, up, g, s, count);
      ASSERT_TRUE(us.is_ok()) << us.status().message();
      line += fmt::format("  S {} {:.2f}", s, *us);
    }
    line += "\n";
  }
  std::printf("%s", line.c_str());
}

// The sweep over one fixture's rank-0 share at `world`, for each cache format of `formats`.
// (Skips the calling test without a device or DSV41_GPU_BENCH.)
void sweep_fixture(const char* fixture, int shards, int world, std::initializer_list<CacheFormat> formats) {
  const BenchDevice b = bench_device();
  if (!b.skip.empty()) GTEST_SKIP() << b.skip;
  ASSERT_TRUE(b.error.empty()) << b.error;
  GpuSetup s = gpu_setup();
  ASSERT_TRUE(s.device) << s.skip;
  auto inputs = synth_inputs(fixture, SynthFormat::Release, shards);
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  std::printf("%s world %d\n", fixture, world);
  for (CacheFormat format : formats) {
    const char* name = format == CacheFormat::BF16 ? "bf16" : "packed";
    ServingSettings settings;
    settings.cache_format = format;
    std::set<std::string> without_kernel;
    auto r = plan_lists(*inputs, fmt::format("{} caches={}", fixture, name), world, 0, settings, s.target,
                        without_kernel);
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    // One case per (phase, variant): the decode phases of kDecodeRows and the largest prefill segment.
    size_t prefill = SIZE_MAX;
    std::vector<size_t> phases;
    for (size_t p = 0; p < (*r)->calls.phases.size(); ++p) {
      const Phase& phase = (*r)->calls.phases[p];
      if (phase.kind == PhaseKind::Decode && kDecodeRows.count(phase.rows)) phases.push_back(p);
      if (phase.kind != PhaseKind::Decode && (prefill == SIZE_MAX || phase.rows > (*r)->calls.phases[prefill].rows))
        prefill = p;
    }
    if (prefill != SIZE_MAX) phases.push_back(prefill);
    std::vector<Case> cases;
    for (size_t p : phases) {
      std::map<std::string, Case> one;
      collect(one, *r, {p}, &kOps, [](const Case& x, const Case& y) { return case_weights(x) < case_weights(y); });
      for (auto& [key, c] : one)
        if (c.lists->calls.phases[c.phase].rows <= 16 || key.rfind("sparse_attention", 0) == 0) cases.push_back(c);
    }
    std::vector<const Case*> list;
    for (const Case& c : cases) list.push_back(&c);
    std::unique_ptr<gpu::KernelLauncher> launcher;
    const std::vector<int32_t> kernel_of = compile_and_load(list, s.target, *s.device, launcher);
    for (size_t i = 0; i < list.size(); ++i) {
      ASSERT_GE(kernel_of[i], 0) << list[i]->key;
      const CallSite site = site_of(*list[i]);
      auto in = make_inputs(site, mix_seed(run_seed(), hash_text(list[i]->key)));
      ASSERT_TRUE(in.is_ok()) << in.status().message();
      const bool attention = site.call->op == "sparse_attention";
      if (attention) load_fully(site, *in);
      auto up = upload_call(*s.device, site, *in);
      ASSERT_TRUE(up.is_ok()) << up.status().message();
      if (attention) {
        sweep_attention(*b.driver, *launcher, kernel_of[i], site, **up, name);
        continue;
      }
      auto us =
          time_call(*b.driver, *launcher, kernel_of[i], *site.call, call_env(site), {(*up)->bindings}, 10, kReplays);
      ASSERT_TRUE(us.is_ok()) << us.status().message();
      std::printf("index_select     %-6s %4lld rows mode %lld: %9.2f us  (%s)\n", name,
                  static_cast<long long>(in->rows), static_cast<long long>(site.call->constant("mode")), *us,
                  in->description.c_str());
    }
  }
}

TEST(GpuSpeed, AttentionAndIndexerAtTheReleaseShapes) {
  sweep_fixture("dsv41-release", 8, 4, {CacheFormat::BF16, CacheFormat::Official});
}

// The bench fixture's 64 heads at world 1 (`dsv41-rt bench`'s program): the groups and splits at one
// row with four times the release share's heads.
TEST(GpuSpeed, AttentionAndIndexerAtTheBenchShapes) { sweep_fixture("dsv41-bench", 1, 1, {CacheFormat::BF16}); }

}  // namespace
}  // namespace dsv41::gpu_test
