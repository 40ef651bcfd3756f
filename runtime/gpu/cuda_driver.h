// runtime/gpu/cuda_driver.h — the CUDA driver API, opened at run time (dlopen("libcuda.so.1")), never
// linked: a binary built here starts on a machine without a driver and says why it cannot use a GPU.
//
// Only cuda.h's types and enums are used at compile time. Every CUresult becomes a Status naming the
// call and the driver's own text for the error (cuGetErrorName / cuGetErrorString).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace dsv41::gpu {

class CudaDriver {
 public:
  // The process's driver: libcuda.so.1 opened, every function resolved, cuInit(0) done. The result
  // (success or failure) is computed once and returned again on later calls. Without a driver:
  // "libcuda.so.1: not found (no NVIDIA driver on this machine)".
  static Result<CudaDriver*> open();

  // cuDeviceGetCount.
  Result<int> device_count() const;
  // Makes device `ordinal`'s primary context current on the calling thread (retained once per
  // device for the life of the process). The device in use is per thread, so ranks that are threads
  // of one process may each use another GPU.
  Status use_device(int ordinal);
  // "NVIDIA H200 (sm_90, driver 13.0)": the calling thread's device.
  std::string describe_device() const;
  // The current device's compute capability as "sm_XY".
  Result<std::string> device_arch() const;
  // cuDeviceGetAttribute of the current device.
  Result<int> attribute(CUdevice_attribute attribute) const;
  Status synchronize() const;
  // cuMemGetInfo of the current context: {free, total} bytes.
  Result<std::pair<size_t, size_t>> memory_info() const;

  // OK, or an error "<call>: <CUDA_ERROR_NAME>: <description>" (call may carry its arguments).
  Status check(CUresult result, std::string_view call) const;

  // The resolved entry points (the _v2 symbols where cuda.h maps a name to one).
  decltype(&::cuInit) cuInit = nullptr;
  decltype(&::cuDriverGetVersion) cuDriverGetVersion = nullptr;
  decltype(&::cuDeviceGet) cuDeviceGet = nullptr;
  decltype(&::cuDeviceGetCount) cuDeviceGetCount = nullptr;
  decltype(&::cuDeviceGetName) cuDeviceGetName = nullptr;
  decltype(&::cuDeviceGetAttribute) cuDeviceGetAttribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) cuDevicePrimaryCtxRetain = nullptr;
  decltype(&::cuCtxSetCurrent) cuCtxSetCurrent = nullptr;
  decltype(&::cuCtxSynchronize) cuCtxSynchronize = nullptr;
  decltype(&::cuMemAlloc) cuMemAlloc = nullptr;      // cuMemAlloc_v2
  decltype(&::cuMemFree) cuMemFree = nullptr;        // cuMemFree_v2
  decltype(&::cuMemcpyHtoD) cuMemcpyHtoD = nullptr;  // cuMemcpyHtoD_v2
  decltype(&::cuMemcpyDtoH) cuMemcpyDtoH = nullptr;  // cuMemcpyDtoH_v2
  decltype(&::cuMemsetD8) cuMemsetD8 = nullptr;      // cuMemsetD8_v2
  decltype(&::cuModuleLoadData) cuModuleLoadData = nullptr;
  decltype(&::cuModuleUnload) cuModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) cuModuleGetFunction = nullptr;
  decltype(&::cuFuncGetAttribute) cuFuncGetAttribute = nullptr;
  decltype(&::cuFuncSetAttribute) cuFuncSetAttribute = nullptr;
  decltype(&::cuLaunchKernel) cuLaunchKernel = nullptr;
  // Programmatic dependent launch (runtime/gpu/programmatic_launch.h). Required like the rest: a driver
  // that loads the program's NVRTC 13 cubins has it, and a silent fallback would skew measurements.
  decltype(&::cuLaunchKernelEx) cuLaunchKernelEx = nullptr;
  decltype(&::cuGetErrorString) cuGetErrorString = nullptr;
  decltype(&::cuGetErrorName) cuGetErrorName = nullptr;
  // Streams, graphs, free memory and pinned host memory (the device session, runtime/gpu/gpu_session.h).
  decltype(&::cuMemGetInfo) cuMemGetInfo = nullptr;                // cuMemGetInfo_v2
  decltype(&::cuMemcpyHtoDAsync) cuMemcpyHtoDAsync = nullptr;      // cuMemcpyHtoDAsync_v2
  decltype(&::cuMemcpyDtoHAsync) cuMemcpyDtoHAsync = nullptr;      // cuMemcpyDtoHAsync_v2
  decltype(&::cuMemsetD8Async) cuMemsetD8Async = nullptr;
  decltype(&::cuMemHostAlloc) cuMemHostAlloc = nullptr;
  decltype(&::cuMemFreeHost) cuMemFreeHost = nullptr;
  decltype(&::cuStreamCreate) cuStreamCreate = nullptr;
  decltype(&::cuStreamDestroy) cuStreamDestroy = nullptr;          // cuStreamDestroy_v2
  decltype(&::cuStreamSynchronize) cuStreamSynchronize = nullptr;
  decltype(&::cuStreamBeginCapture) cuStreamBeginCapture = nullptr;  // cuStreamBeginCapture_v2
  decltype(&::cuStreamEndCapture) cuStreamEndCapture = nullptr;
  decltype(&::cuGraphInstantiate) cuGraphInstantiate = nullptr;    // cuGraphInstantiateWithFlags
  decltype(&::cuGraphLaunch) cuGraphLaunch = nullptr;
  decltype(&::cuGraphExecDestroy) cuGraphExecDestroy = nullptr;
  decltype(&::cuGraphDestroy) cuGraphDestroy = nullptr;
  decltype(&::cuCtxGetCurrent) cuCtxGetCurrent = nullptr;
  // Events: `dsv41-rt bench` times replays and single launches with them (runtime/gpu/bench_*).
  decltype(&::cuEventCreate) cuEventCreate = nullptr;
  decltype(&::cuEventDestroy) cuEventDestroy = nullptr;            // cuEventDestroy_v2
  decltype(&::cuEventRecord) cuEventRecord = nullptr;
  decltype(&::cuEventSynchronize) cuEventSynchronize = nullptr;
  decltype(&::cuEventElapsedTime) cuEventElapsedTime = nullptr;    // cuEventElapsedTime_v2
  // The exchange of ranks on one GPU (runtime/gpu/phase_graphs_group.h): edges between rank streams, copies.
  decltype(&::cuStreamWaitEvent) cuStreamWaitEvent = nullptr;
  decltype(&::cuMemcpyDtoDAsync) cuMemcpyDtoDAsync = nullptr;      // cuMemcpyDtoDAsync_v2

 private:
  CudaDriver() = default;
  static Result<CudaDriver*> load();
  void* library_ = nullptr;
};

// Device memory, freed when the object goes (move-only). A zero-byte buffer holds no allocation and
// its pointer is 0.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Result<DeviceBuffer> allocate(CudaDriver& driver, size_t bytes);
  // allocate + upload.
  static Result<DeviceBuffer> from_host(CudaDriver& driver, const void* data, size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  // Copies within [offset, offset + bytes) of the buffer; a range outside it is refused.
  Status upload(const void* src, size_t bytes, size_t offset = 0);
  Status download(void* dst, size_t bytes, size_t offset = 0) const;
  Status fill(uint8_t byte);  // every byte

 private:
  Status check_range(std::string_view what, size_t bytes, size_t offset) const;
  CudaDriver* driver_ = nullptr;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace dsv41::gpu
