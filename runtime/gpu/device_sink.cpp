// runtime/gpu/device_sink.cpp — pinned staging, per-buffer streams, async host-to-device copies.
#include "runtime/gpu/device_sink.h"

namespace dsv41::gpu {

DeviceSink::DeviceSink(CudaDriver& driver, CUdeviceptr region, uint64_t region_bytes)
    : driver_(driver), region_(region), region_bytes_(region_bytes) {
  if (driver_.cuCtxGetCurrent(&context_) != CUDA_SUCCESS) context_ = nullptr;
}

DeviceSink::~DeviceSink() { release(); }

void DeviceSink::release() {
  for (Staging& s : staging_) {
    if (s.stream) {
      (void)driver_.cuStreamSynchronize(s.stream);
      (void)driver_.cuStreamDestroy(s.stream);
    }
    if (s.host) (void)driver_.cuMemFreeHost(s.host);
  }
  staging_.clear();
}

Status DeviceSink::begin(int workers, size_t chunk_bytes) {
  if (!context_) return Status::error("device sink: no current CUDA context on the thread that made it");
  release();
  staging_.resize(static_cast<size_t>(workers) * 2);
  for (Staging& s : staging_) {
    void* host = nullptr;
    DSV41_TRY(driver_.check(driver_.cuMemHostAlloc(&host, chunk_bytes, 0),
                            fmt::format("cuMemHostAlloc({} bytes of pinned staging)", chunk_bytes)));
    s.host = static_cast<uint8_t*>(host);
    DSV41_TRY(driver_.check(driver_.cuStreamCreate(&s.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate(staging)"));
  }
  return Status::ok();
}

Result<uint8_t*> DeviceSink::acquire(int worker, int which) {
  // Reader threads are not the thread that made the context current.
  DSV41_TRY(driver_.check(driver_.cuCtxSetCurrent(context_), "cuCtxSetCurrent(weight reader)"));
  Staging& s = staging_[static_cast<size_t>(worker) * 2 + which];
  DSV41_TRY(driver_.check(driver_.cuStreamSynchronize(s.stream), "cuStreamSynchronize(staging buffer)"));
  return s.host;
}

Status DeviceSink::submit(int worker, int which, uint64_t offset, size_t bytes) {
  if (offset > region_bytes_ || bytes > region_bytes_ - offset)
    return Status::errorf("device sink: {} bytes at {} outside the {}-byte weight region", bytes, offset, region_bytes_);
  Staging& s = staging_[static_cast<size_t>(worker) * 2 + which];
  return driver_.check(driver_.cuMemcpyHtoDAsync(region_ + offset, s.host, bytes, s.stream),
                       fmt::format("cuMemcpyHtoDAsync_v2(weights, {} bytes at {})", bytes, offset));
}

Status DeviceSink::finish() {
  for (Staging& s : staging_)
    DSV41_TRY(driver_.check(driver_.cuStreamSynchronize(s.stream), "cuStreamSynchronize(staging, finish)"));
  return Status::ok();
}

}  // namespace dsv41::gpu
