// tests/gpu/gpu_timing.h — timing kernels for the speed benchmarks: a launch sequence captured into one
// CUDA graph (so launch overhead does not count) and the device's read bandwidth measured by a plain
// streaming-read kernel in the same run (the roofline a kernel's bytes are compared with).
#pragma once

#include <functional>

#include "common/status.h"
#include "runtime/gpu/cuda_driver.h"

namespace dsv41::gpu_test {

// Captures `count` calls of enqueue(i, stream) into one graph, replays it once to warm up and then
// `replays` times; returns the median microseconds per call.
Result<double> time_per_call(gpu::CudaDriver& d, int count, int replays,
                             const std::function<Status(int i, CUstream stream)>& enqueue);

// The device's read bandwidth in GB/s: a kernel that reads `bytes` (beyond L2: 1 GiB is meant) once with
// 16-byte loads, timed as above. Compiled with NVRTC for `arch`.
Result<double> streaming_read_gbps(gpu::CudaDriver& d, const std::string& arch, size_t bytes);

}  // namespace dsv41::gpu_test
