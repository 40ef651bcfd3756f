// tests/runtime/cuda_driver_test.cpp — the CUDA driver opens at run time: without libcuda.so.1 it is a
// clear Status, never a crash; and launch parameters are marshalled in contract order (no GPU needed).
#include <cstring>
#include <map>

#include <gtest/gtest.h>

#include "common/kernel_contract.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/kernel_launcher.h"
#include "tests/support/test_support.h"

namespace dsv41::gpu {
namespace {

TEST(CudaDriver, OpenWithoutADriverIsAClearError) {
  if (test::cuda_driver_installed()) GTEST_SKIP() << "libcuda.so.1 is installed here";
  auto driver = CudaDriver::open();
  ASSERT_FALSE(driver.is_ok());
  EXPECT_NE(driver.status().message().find("libcuda.so.1: not found (no NVIDIA driver on this machine)"),
            std::string::npos)
      << driver.status().message();
  // The answer is remembered, and stays the same.
  auto again = CudaDriver::open();
  ASSERT_FALSE(again.is_ok());
  EXPECT_EQ(again.status().message(), driver.status().message());
}

// A linear call as the emitter writes it, bound to device addresses by name.
TEST(KernelLauncher, MarshalsParametersInContractOrder) {
  const KernelContract* contract = find_contract("linear");
  ASSERT_NE(contract, nullptr);
  Call call;
  call.op = "linear";
  call.constants = {{"in_features", 64}, {"out_features", 96}};
  call.args = {{"x", ArgKind::Scratch, {0}, 0}, {"w", ArgKind::Weight, {0}, 0}, {"out", ArgKind::Scratch, {1}, 0}};
  const BufferDecl x{"x", DType::BF16, {4, 64}, 0, 512}, out{"out", DType::F32, {4, 96}, 512, 1536};
  CallEnv env;
  env.rows = 4;
  env.buffer = [&](const Arg& a) -> const BufferDecl* { return a.ints[0] == 0 ? &x : &out; };
  env.weight_shape = [](const Arg&) { return std::vector<int64_t>{96, 64}; };
  env.weight_format = [](int64_t) -> std::optional<WeightFormat> { return WeightFormat::FP8Tile32; };
  LaunchBindings b;
  b.rows = 4;
  b.statics = 0x1000;
  b.errors = 0x2000;
  b.scratch = {{"x", 0x3000}, {"out", 0x4000}};
  b.weights = {{"w", {0x5000, 0x6000}}};
  auto params = marshal_params(call, env, b);
  ASSERT_TRUE(params.is_ok()) << params.status().message();
  ASSERT_EQ(params->size(), contract->params.size());
  const std::map<std::string, uint64_t> expected = {{"rows", 4},      {"statics", 0x1000}, {"errors", 0x2000},
                                                    {"x", 0x3000},    {"out", 0x4000},     {"w", 0x5000},
                                                    {"out_features", 96}};
  for (size_t i = 0; i < params->size(); ++i) {
    EXPECT_EQ(params->name(i), contract->params[i].name);
    // A Weight travels as {data, scales}, 16 bytes; everything else of linear is 8 bytes.
    ASSERT_EQ(params->value_size(i), params->name(i) == "w" ? 16u : 8u) << params->name(i);
    uint64_t v[2] = {0, 0};
    std::memcpy(v, params->value(i), params->value_size(i));
    auto it = expected.find(params->name(i));
    ASSERT_NE(it, expected.end()) << "unexpected parameter " << params->name(i);
    EXPECT_EQ(v[0], it->second) << params->name(i);
    if (params->name(i) == "w") EXPECT_EQ(v[1], 0x6000u) << "the scales' address";
  }
  void** pointers = params->pointers();
  EXPECT_EQ(pointers[0], params->value(0));

  // An argument the call has but the bindings lack is refused, naming it.
  b.weights.clear();
  auto missing = marshal_params(call, env, b);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("argument w"), std::string::npos) << missing.status().message();
}

// A State travels whole: base, per-slot stride and slot count, 24 bytes (a kernel reads all three).
TEST(KernelLauncher, MarshalsAStateWithItsSlotCount) {
  Call call;
  call.op = "window_store";
  call.constants = {{"window", 16}, {"head_dim", 64}};
  call.args = {{"statics", ArgKind::Statics, {}, 0}, {"kv", ArgKind::Scratch, {0}, 0}, {"ring", ArgKind::State, {0}, 0}};
  const BufferDecl kv{"kv", DType::BF16, {4, 64}, 0, 512}, ring{"ring", DType::BF16, {16, 64}, 0, 2048};
  CallEnv env;
  env.rows = 4;
  env.buffer = [&](const Arg& a) -> const BufferDecl* { return a.kind == ArgKind::State ? &ring : &kv; };
  LaunchBindings b;
  b.rows = 4;
  b.scratch = {{"kv", 0x3000}};
  b.state = {{"ring", {0x7000, 2048, 5}}};
  auto params = marshal_params(call, env, b);
  ASSERT_TRUE(params.is_ok()) << params.status().message();
  bool found = false;
  for (size_t i = 0; i < params->size(); ++i) {
    if (params->name(i) != "ring") continue;
    found = true;
    ASSERT_EQ(params->value_size(i), 24u);
    int64_t v[3];
    std::memcpy(v, params->value(i), sizeof(v));
    EXPECT_EQ(v[0], 0x7000);
    EXPECT_EQ(v[1], 2048);
    EXPECT_EQ(v[2], 5);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace dsv41::gpu
