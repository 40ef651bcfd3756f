// tests/gpu/gpu_op_check.cpp — the per-variant check of the GPU op tests (tests/gpu/gpu_op_check.h).
#include "tests/gpu/gpu_op_check.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "common/hashing.h"
#include "common/numeric_formats.h"
#include "tests/gpu/gpu_op_compare.h"
#include "tests/gpu/gpu_op_steps.h"
#include "tests/gpu/gpu_op_values.h"

namespace dsv41::gpu_test {

using gpu::KernelLauncher;

namespace {

// Checks one case; failures are reported with the key, the call, the inputs and the seed.
void check_case(const Case& c, const Device* device, KernelLauncher* launcher, int32_t kernel,
                const AdjustInputs& adjust) {
  const uint64_t seed = mix_seed(run_seed(), hash_text(c.key));
  SCOPED_TRACE(fmt::format("{} — {} — run seed {} (rerun: DSV41_GPU_SEED={} DSV41_GPU_FILTER='{}')", c.key, c.where,
                           run_seed(), run_seed(), c.key));
  const CallSite site = site_of(c);
  auto inputs = make_inputs(site, seed);
  ASSERT_TRUE(inputs.is_ok()) << "building the inputs: " << inputs.status().message();
  if (adjust) adjust(*inputs);
  Image cpu = inputs->image;
  const Status cpu_status = run_cpu(site, *inputs, cpu);
  ASSERT_TRUE(cpu_status.is_ok()) << "the CPU op refused the generated inputs: " << cpu_status.message()
                                  << "\n  inputs: " << inputs->description;
  // The CPU op must have written every float output (no 0xFF poison, which reads as NaN, left).
  for (const Output& o : inputs->outputs) {
    const DType dtype = output_dtype(site, o);
    if (dtype == DType::I32 || dtype == DType::U8) continue;  // ids; packed cache rows (any byte is a code)
    const std::vector<uint8_t>& bytes = output_bytes(cpu, o);
    bool finite = true;
    for (size_t i = 0; i < bytes.size() && finite; i += dtype_bytes(dtype)) {
      float v;
      if (dtype == DType::BF16) {
        uint16_t h;
        std::memcpy(&h, bytes.data() + i, 2);
        v = bf16_to_f32(h);
      } else {
        std::memcpy(&v, bytes.data() + i, 4);
      }
      finite = std::isfinite(v);
    }
    EXPECT_TRUE(finite) << "the CPU op left a non-finite value in " << o.arg
                        << " (unwritten poison or overflow: the inputs are not meaningful)\n  inputs: "
                        << inputs->description;
  }
  if (!device) return;  // dry run: planning, inputs and the CPU op only

  Image gpu = inputs->image;
  int32_t error_word = -1;
  const Status gpu_status = run_gpu(*device, *launcher, kernel, site, *inputs, gpu, error_word);
  ASSERT_TRUE(gpu_status.is_ok()) << "GPU: " << gpu_status.message() << "\n  inputs: " << inputs->description;
  EXPECT_EQ(error_word, 0) << "the kernel reported error " << error_word << " (" << error_code_name(error_word)
                           << ") on valid inputs\n  inputs: " << inputs->description;
  if (env_text("DSV41_GPU_SELFTEST")) {  // every comparison must then fail: proves they look at the data
    for (const Output& o : inputs->outputs) {
      std::vector<uint8_t>& bytes = o.state ? gpu.state.at(o.index) : gpu.scratch.at(o.index);
      const int size = dtype_bytes(output_dtype(site, o));
      if (!bytes.empty()) bytes[(bytes.size() / size / 2) * size + size - 1] ^= 0x40;  // a high exponent / value bit
      if (output_dtype(site, o) == DType::U8)  // packed rows: past the bytes kPackedFraction lets differ
        for (size_t i = 0; i < bytes.size(); i += 97) bytes[i] ^= 0x40;
    }
  }
  for (const Output& o : inputs->outputs) {
    const std::vector<uint8_t>& c_bytes = output_bytes(cpu, o);
    const std::vector<uint8_t>& g_bytes = output_bytes(gpu, o);
    const std::string report =
        compare_output(fmt::format("output {}{}", o.arg, o.state ? " (state, every slot)" : ""), output_dtype(site, o),
                       output_shape(site, *inputs, o), c_bytes.data(), g_bytes.data(), c_bytes.size(),
                       o.state ? inputs->state_layout.at(o.index).stride : 0,
                       rounds_act_to_bf16(c.key) ? kF32AbsAfterBf16Act : kF32Abs, kPackedFraction,
                       rotated_after_rounding(c.key));
    EXPECT_TRUE(report.empty()) << report << "\n  inputs: " << inputs->description;
    // hc_collapse_norm's check-mode (F32) variants run in the CPU's exact order (kernels/hc_collapse_norm.cuh):
    // the same bits, not only the tolerance, so no packed cache code downstream can flip on them.
    if (c.key.rfind("hc_collapse_norm{", 0) == 0 && output_dtype(site, o) == DType::F32) {
      size_t differ = 0;
      for (size_t i = 0; i + 4 <= c_bytes.size(); i += 4)
        differ += std::memcmp(c_bytes.data() + i, g_bytes.data() + i, 4) != 0;
      EXPECT_EQ(differ, 0u) << "output " << o.arg << " (F32, check mode: must be the CPU's bits): " << differ << " of "
                            << c_bytes.size() / 4 << " values differ\n  inputs: " << inputs->description;
    }
    if (env_text("DSV41_GPU_STEPS"))  // every float output in bf16 steps (gpu_op_steps.h): issue 9's diagnosis
      if (const std::string line = steps_line(output_dtype(site, o), c_bytes.data(), g_bytes.data(),
                                              static_cast<int64_t>(c_bytes.size()));
          !line.empty())
        std::printf("       steps of output %s: %s\n", o.arg.c_str(), line.c_str());
    // Products: the tight bf16 check (gpu_op_steps.h), and its counts printed, so that a run shows
    // the bf16 and the FP8/FP4 variants of one op side by side.
    if (tight_bf16_op(c.key) && output_dtype(site, o) == DType::BF16) {
      const Bf16Steps steps = bf16_steps(c_bytes.data(), g_bytes.data(), static_cast<int64_t>(c_bytes.size() / 2));
      std::printf("       bf16 steps of output %s: %lld of %lld elements differ, max %lld\n", o.arg.c_str(),
                  static_cast<long long>(steps.differ), static_cast<long long>(steps.n),
                  static_cast<long long>(steps.max_steps));
      const std::string tight = steps_report(fmt::format("output {}", o.arg), steps);
      EXPECT_TRUE(tight.empty()) << tight << "\n  inputs: " << inputs->description;
    }
  }
}

}  // namespace

// Variants among `cases` whose key reads a weight in a scaled (FP8 / FP4) format.
int quantized_keys(const std::map<std::string, Case>& cases) {
  int n = 0;
  for (const auto& [key, c] : cases)
    n += key.find("=fp8_tile32") != std::string::npos || key.find("=fp4_row32") != std::string::npos;
  return n;
}

// Compiles the cases' variants, then checks each. Returns how many were checked.
int check_cases(const std::map<std::string, Case>& cases, const Target& target, const Device* device,
                const AdjustInputs& adjust) {
  std::vector<const Case*> list;
  for (const auto& [key, c] : cases) list.push_back(&c);
  std::unique_ptr<KernelLauncher> launcher;
  std::vector<int32_t> kernel_of(list.size(), -1);
  if (device) kernel_of = compile_and_load(list, target, *device, launcher);
  int checked = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (device && kernel_of[i] < 0) continue;
    const auto start = std::chrono::steady_clock::now();
    const int parts_before = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    check_case(*list[i], device, launcher.get(), kernel_of[i], adjust);
    const int parts = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    std::printf("  %-4s %6.2f s  %s  [%s]\n", parts == parts_before ? "ok" : "FAIL",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), list[i]->key.c_str(),
                list[i]->where.c_str());
    ++checked;
  }
  return checked;
}

void report_without_kernel(const std::set<std::string>& ops) {
  if (ops.empty()) return;
  std::string names;
  for (const std::string& op : ops) names += (names.empty() ? "" : ", ") + op;
  ADD_FAILURE() << "ops without a kernel in kernels/ (their calls were not checked): " << names;
}

}  // namespace dsv41::gpu_test
