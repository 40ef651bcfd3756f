// tests/gpu/gpu_op_steps_test.cpp — the bf16 step counter of the products' tight check, on known codes
// (no GPU needed).
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "tests/gpu/gpu_op_steps.h"

namespace dsv41::gpu_test {
namespace {

std::vector<uint8_t> bytes_of(const std::vector<uint16_t>& codes) {
  std::vector<uint8_t> b(codes.size() * 2);
  std::memcpy(b.data(), codes.data(), b.size());
  return b;
}

Bf16Steps steps_of(const std::vector<uint16_t>& cpu, const std::vector<uint16_t>& gpu) {
  return bf16_steps(bytes_of(cpu).data(), bytes_of(gpu).data(), static_cast<int64_t>(cpu.size()));
}

TEST(GpuOpSteps, NeighboursAcrossZeroAndSignsCountAsSteps) {
  // 1.0 (0x3F80) vs its upper neighbour; the smallest subnormals either side of zero are 2 steps
  // apart; +0 and −0 are the same; 2.0 (0x4000) vs 1.0 is 128 steps.
  const Bf16Steps s = steps_of({0x3F80, 0x0001, 0x0000, 0x3F80}, {0x3F81, 0x8001, 0x8000, 0x4000});
  EXPECT_EQ(s.n, 4);
  EXPECT_EQ(s.differ, 3);
  EXPECT_EQ(s.max_steps, 128);
  EXPECT_EQ(s.beyond, 1);  // the subnormal pair is 2 steps apart but within 1e-4·max|c|
  EXPECT_FALSE(steps_report("out", s).empty());
}

TEST(GpuOpSteps, RareSingleStepsPassAndNaNMatchesOnlyNaN) {
  std::vector<uint16_t> cpu(100, 0x3F80), gpu(100, 0x3F80);
  gpu[7] = 0x3F7F;  // one element one step below: 1 % of the elements
  cpu[9] = gpu[9] = 0x7FC0;  // NaN pairs are left out
  const Bf16Steps ok = steps_of(cpu, gpu);
  EXPECT_EQ(ok.n, 99);
  EXPECT_EQ(ok.differ, 1);
  EXPECT_EQ(ok.beyond, 0);
  EXPECT_TRUE(steps_report("out", ok).empty());
  for (int i = 0; i < 5; ++i) gpu[20 + i] = 0x3F81;  // 6 % one step off: more than the bound
  EXPECT_FALSE(steps_report("out", steps_of(cpu, gpu)).empty());
  gpu = cpu;
  gpu[3] = 0x7FC0;  // NaN against a number
  const Bf16Steps nan = steps_of(cpu, gpu);
  EXPECT_EQ(nan.beyond, 1);
  EXPECT_FALSE(steps_report("out", nan).empty());
}

TEST(GpuOpSteps, F32OutputsAreMeasuredInStepsOfTheirBf16Neighbourhood) {
  // 1.0 and its fp32 neighbour (2^-16 of a bf16 step); 3.0 against 3.0 + 1/64 (a step at 3 is 1/64);
  // 0.5 against 0.5 + 1/1024 (1/4 step); NaN pairs left out.
  const std::vector<float> cpu = {1.0f, 3.0f, 0.5f, NAN}, gpu = {std::nextafter(1.0f, 2.0f), 3.0f + 1.0f / 64, 0.5f + 1.0f / 1024, NAN};
  const F32Steps s = f32_steps(reinterpret_cast<const uint8_t*>(cpu.data()), reinterpret_cast<const uint8_t*>(gpu.data()), 4);
  EXPECT_EQ(s.n, 3);
  EXPECT_EQ(s.sixteenth, 2);
  EXPECT_EQ(s.half, 1);
  EXPECT_DOUBLE_EQ(s.max_steps, 1.0);
  EXPECT_EQ(steps_line(DType::F32, reinterpret_cast<const uint8_t*>(cpu.data()), reinterpret_cast<const uint8_t*>(gpu.data()), 16),
            "f32 n 3 over1/16 2 over1/2 1 max 1");
}

// Only the experts with bf16 activations get the wider absolute part for their F32 output.
TEST(GpuOpSteps, OnlyBf16ExpertsRoundTheirActToBf16) {
  EXPECT_TRUE(rounds_act_to_bf16("moe_experts{hidden=256,width=640,topk=6,dtype_x=bf16,format_w1=bf16}@sm_90a"));
  EXPECT_TRUE(rounds_act_to_bf16("shared_expert{hidden=256,width=640,dtype_x=bf16,format_w1=fp8_tile32}@sm_90a"));
  EXPECT_FALSE(rounds_act_to_bf16("moe_experts{hidden=256,width=640,topk=6,dtype_x=f32,format_w1=bf16}@sm_90a"));
  EXPECT_FALSE(rounds_act_to_bf16("linear{in_features=96,dtype_x=bf16,format_w=bf16}@sm_90a"));
}

// Only sparse_attention with its inverse rope and a bf16 output has rotated dims: the last rope_dim of each
// head_dim, read from its key.
TEST(GpuOpSteps, OnlyRopedBf16AttentionHasRotatedDims) {
  const RotatedDims roped = rotated_after_rounding(
      "sparse_attention{heads=32,head_dim=512,window=128,topk=0,rope_dim=64,many_rows=1,dtype_q=bf16,"
      "dtype_out=bf16}@sm_90a");
  EXPECT_EQ(roped.head_dim, 512);
  EXPECT_EQ(roped.rope_dim, 64);
  EXPECT_EQ(rotated_after_rounding("sparse_attention{heads=32,head_dim=512,window=128,topk=0,rope_dim=0,"
                                   "many_rows=1,dtype_q=bf16,dtype_out=bf16}@sm_90a").head_dim, 0);
  EXPECT_EQ(rotated_after_rounding("sparse_attention{heads=4,head_dim=64,window=8,topk=0,rope_dim=16,many_rows=0,"
                                   "dtype_q=f32,dtype_out=f32}@sm_90a").head_dim, 0);
  EXPECT_EQ(rotated_after_rounding("rope{heads=4,head_dim=64,rope_dim=16,dtype_x=bf16,dtype_out=bf16}@sm_90a").head_dim, 0);
}

// The wider absolute part applies to the rotated dims only: the same difference passes in the last rope_dim
// of a head and fails before them.
TEST(GpuOpCompare, RotatedDimsAloneGetTheWiderAbsolutePart) {
  const int64_t head_dim = 8, rope_dim = 2;
  std::vector<uint16_t> cpu(2 * head_dim, 0x3f80), gpu(cpu);  // bf16 1.0 everywhere: max|c| = 1
  auto bits = [](float v) { uint32_t u; std::memcpy(&u, &v, 4); return static_cast<uint16_t>(u >> 16); };
  cpu[head_dim + 7] = bits(0.0f), gpu[head_dim + 7] = bits(0.00390625f);  // 3.9e-3 > 1e-3 at |c| = 0: a rotated dim
  const auto* c = reinterpret_cast<const uint8_t*>(cpu.data());
  const auto* g = reinterpret_cast<const uint8_t*>(gpu.data());
  EXPECT_EQ(compare_output("out", DType::BF16, {1, 2 * head_dim}, c, g, 4 * head_dim, 0, kF32Abs, 0,
                           RotatedDims{head_dim, rope_dim}), "");
  EXPECT_NE(compare_output("out", DType::BF16, {1, 2 * head_dim}, c, g, 4 * head_dim), "");
  cpu[head_dim + 7] = gpu[head_dim + 7] = bits(1.0f);
  cpu[head_dim + 5] = bits(0.0f), gpu[head_dim + 5] = bits(0.00390625f);  // the same step before the rotated dims
  EXPECT_NE(compare_output("out", DType::BF16, {1, 2 * head_dim}, c, g, 4 * head_dim, 0, kF32Abs, 0,
                           RotatedDims{head_dim, rope_dim}), "");
}

}  // namespace
}  // namespace dsv41::gpu_test
