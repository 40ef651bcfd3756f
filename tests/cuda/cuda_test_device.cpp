// tests/cuda/cuda_test_device.cpp — the skip decision and the kernel cache folder of the CUDA backend tests.
#include "tests/cuda/cuda_test_device.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace dsv41::cuda_test {

TestDevice open_test_device() {
  TestDevice d;
  auto driver = gpu::CudaDriver::open();
  if (!driver.is_ok()) return {nullptr, driver.status().message()};
  auto count = (*driver)->device_count();
  if (!count.is_ok() || *count < 1) return {nullptr, count.is_ok() ? "the CUDA driver reports no device" : count.status().message()};
  const Status used = (*driver)->use_device(0);
  if (!used.is_ok()) return {nullptr, used.message()};
  auto arch = (*driver)->device_arch();
  if (!arch.is_ok() || *arch != "sm_90")
    return {nullptr, "the tests plan for target h200 (sm_90a); this device is " + (*driver)->describe_device()};
  static bool said = false;
  if (!said) std::printf("device: %s\n", (*driver)->describe_device().c_str());
  said = true;
  d.driver = *driver;
  return d;
}

std::string kernel_cache_dir() {
  if (const char* env = std::getenv("DSV41_CACHE"); env && *env) return env;
  return (std::filesystem::temp_directory_path() / ("dsv41_cuda_test_cache_" + std::to_string(getpid()))).string();
}

}  // namespace dsv41::cuda_test
