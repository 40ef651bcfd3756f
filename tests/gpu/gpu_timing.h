// tests/gpu/gpu_timing.h — timing kernels for the speed benchmarks: a launch sequence captured into one
// CUDA graph (so launch overhead does not count) and the device's read bandwidth measured in the same
// run by the runtime's streaming-read kernel (runtime/gpu/stream_read.h, the roofline of `dsv41-rt
// bench`), which a kernel's bytes are compared with.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/kernel_launch.h"
#include "common/status.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/kernel_launcher.h"

namespace dsv41::gpu_test {

// Captures `count` calls of enqueue(i, stream) into one graph, replays it once to warm up and then
// `replays` times; returns the median microseconds per call.
Result<double> time_per_call(gpu::CudaDriver& d, int count, int replays,
                             const std::function<Status(int i, CUstream stream)>& enqueue);

// What a speed benchmark starts from: the device and the roofline measured now (a streaming read of
// 1 GiB, printed). `skip`: why it does not run (DSV41_GPU_BENCH unset, no GPU); `error`: what failed.
struct BenchDevice {
  gpu::CudaDriver* driver = nullptr;
  std::string arch;
  double roof_gbps = 0.0;
  std::string skip, error;
};
BenchDevice bench_device();

// Times `call` (loaded as `kernel`, launched as launch_dims(call, env) says) in one graph of `count`
// calls, call i bound to bindings[i % bindings.size()]; the median microseconds per call.
Result<double> time_call(gpu::CudaDriver& d, gpu::KernelLauncher& launcher, int32_t kernel, const Call& call,
                         const CallEnv& env, const std::vector<gpu::LaunchBindings>& bindings, int count, int replays);

}  // namespace dsv41::gpu_test
