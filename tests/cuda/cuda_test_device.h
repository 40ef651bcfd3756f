// tests/cuda/cuda_test_device.h — device 0 for the CUDA backend tests, or why they skip (no driver, no
// device, a device the h200 target's cubins do not load on), and the NVRTC cache their plans use.
#pragma once

#include <string>

#include "runtime/gpu/cuda_driver.h"

namespace dsv41::cuda_test {

struct TestDevice {
  gpu::CudaDriver* driver = nullptr;  // null: skip, for `skip`
  std::string skip;
};
// Opens the driver and makes device 0 current on the calling thread.
TestDevice open_test_device();

// $DSV41_CACHE, else a folder of this process under the temp directory.
std::string kernel_cache_dir();

}  // namespace dsv41::cuda_test
