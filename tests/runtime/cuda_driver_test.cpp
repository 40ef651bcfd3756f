// tests/runtime/cuda_driver_test.cpp — the CUDA driver opens at run time: without libcuda.so.1 it is a
// clear Status, never a crash; and launch parameters are marshalled in contract order (no GPU needed).
#include <dlfcn.h>

#include <cstring>
#include <map>

#include <gtest/gtest.h>

#include "common/kernel_contract.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/kernel_launcher.h"

namespace dsv41::gpu {
namespace {

bool driver_installed() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library) dlclose(library);
  return library != nullptr;
}

TEST(CudaDriver, OpenWithoutADriverIsAClearError) {
  if (driver_installed()) GTEST_SKIP() << "libcuda.so.1 is installed here";
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
  LaunchBindings b;
  b.rows = 4;
  b.statics = 0x1000;
  b.errors = 0x2000;
  b.scratch = {{"x", 0x3000}, {"out", 0x4000}};
  b.weights = {{"w", 0x5000}};
  auto params = marshal_params(call, env, b);
  ASSERT_TRUE(params.is_ok()) << params.status().message();
  ASSERT_EQ(params->size(), contract->params.size());
  const std::map<std::string, uint64_t> expected = {{"rows", 4},      {"statics", 0x1000}, {"errors", 0x2000},
                                                    {"x", 0x3000},    {"out", 0x4000},     {"w", 0x5000},
                                                    {"out_features", 96}};
  for (size_t i = 0; i < params->size(); ++i) {
    EXPECT_EQ(params->name(i), contract->params[i].name);
    ASSERT_EQ(params->value_size(i), 8u) << params->name(i);
    uint64_t v = 0;
    std::memcpy(&v, params->value(i), 8);
    auto it = expected.find(params->name(i));
    ASSERT_NE(it, expected.end()) << "unexpected parameter " << params->name(i);
    EXPECT_EQ(v, it->second) << params->name(i);
  }
  void** pointers = params->pointers();
  EXPECT_EQ(pointers[0], params->value(0));

  // An argument the call has but the bindings lack is refused, naming it.
  b.weights.clear();
  auto missing = marshal_params(call, env, b);
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("argument w"), std::string::npos) << missing.status().message();
}

}  // namespace
}  // namespace dsv41::gpu
