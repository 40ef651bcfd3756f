// runtime/gpu/device_sink.h — the weight loader's sink into device memory: pinned staging buffers (two
// per reader) copied asynchronously, each on its own stream, so a reader fills one buffer while the
// other is in flight.
#pragma once

#include <cuda.h>

#include <vector>

#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/weight_loader.h"

namespace dsv41::gpu {

class DeviceSink final : public ByteSink {
 public:
  // `region` receives the bytes; the calling thread's current context is used by every reader thread.
  DeviceSink(CudaDriver& driver, CUdeviceptr region, uint64_t region_bytes);
  ~DeviceSink() override;
  DeviceSink(const DeviceSink&) = delete;
  DeviceSink& operator=(const DeviceSink&) = delete;

  Status begin(int workers, size_t chunk_bytes) override;
  Result<uint8_t*> acquire(int worker, int which) override;
  Status submit(int worker, int which, uint64_t offset, size_t bytes) override;
  Status finish() override;

 private:
  struct Staging {
    uint8_t* host = nullptr;  // pinned
    CUstream stream = nullptr;
  };
  void release();
  CudaDriver& driver_;
  CUcontext context_ = nullptr;
  CUdeviceptr region_;
  uint64_t region_bytes_;
  std::vector<Staging> staging_;  // worker * 2 + which
};

}  // namespace dsv41::gpu
