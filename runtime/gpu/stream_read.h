// runtime/gpu/stream_read.h — the roofline of `dsv41-rt bench`: the device's read bandwidth, measured by
// a plain streaming-read kernel (16-byte loads from every thread of every SM over a buffer far larger
// than the L2 cache), so a decode step's GB/s has a same-run, same-device ceiling to be a share of.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "runtime/gpu/bench_stats.h"
#include "runtime/gpu/cuda_driver.h"

namespace dsv41::gpu {

struct ReadBandwidth {
  uint64_t bytes = 0;     // read per launch
  int blocks = 0, threads = 0;
  TimeStats ms;           // per launch
  double gb_per_s = 0;    // bytes / median time, 1e9 bytes a GB
  double best_gb_per_s = 0;  // bytes / fastest time
};

// On the current context: allocates `bytes` (zeroed), JITs the kernel's PTX through the driver
// (cuModuleLoadData: no NVRTC at run time), launches it `warmup` times, then `launches` times between
// CUDA events; frees everything before returning.
Result<ReadBandwidth> measure_read_bandwidth(CudaDriver& driver, uint64_t bytes, int warmup, int launches);

}  // namespace dsv41::gpu
