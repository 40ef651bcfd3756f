// runtime/gpu/cuda_driver.cpp — dlopen of libcuda.so.1, the entry points, CUresult → Status, device buffers.
#include "runtime/gpu/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>
#include <vector>
#include <utility>

namespace dsv41::gpu {
namespace {

constexpr const char* kLibrary = "libcuda.so.1";

// Resolves `symbol` into `fn`; the first missing symbol is remembered.
template <class F>
void resolve(void* library, const char* symbol, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(library, symbol));
  if (!fn && missing.empty()) missing = symbol;
}

}  // namespace

Result<CudaDriver*> CudaDriver::load() {
  void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* why = dlerror();
    const std::string detail = why ? why : "";
    // The usual case on a machine without a GPU; anything else (a broken install) keeps dlerror's text.
    if (detail.empty() || detail.find("No such file") != std::string::npos)
      return Status::error("libcuda.so.1: not found (no NVIDIA driver on this machine)");
    return Status::errorf("libcuda.so.1: not found (no NVIDIA driver on this machine): {}", detail);
  }
  auto* d = new CudaDriver();  // lives as long as the process, like the library
  d->library_ = library;
  std::string missing;
  // The names cuda.h maps to versioned symbols are looked up by their versioned names.
  resolve(library, "cuInit", d->cuInit, missing);
  resolve(library, "cuDriverGetVersion", d->cuDriverGetVersion, missing);
  resolve(library, "cuDeviceGet", d->cuDeviceGet, missing);
  resolve(library, "cuDeviceGetCount", d->cuDeviceGetCount, missing);
  resolve(library, "cuDeviceGetName", d->cuDeviceGetName, missing);
  resolve(library, "cuDeviceGetAttribute", d->cuDeviceGetAttribute, missing);
  resolve(library, "cuDevicePrimaryCtxRetain", d->cuDevicePrimaryCtxRetain, missing);
  resolve(library, "cuCtxSetCurrent", d->cuCtxSetCurrent, missing);
  resolve(library, "cuCtxSynchronize", d->cuCtxSynchronize, missing);
  resolve(library, "cuMemAlloc_v2", d->cuMemAlloc, missing);
  resolve(library, "cuMemFree_v2", d->cuMemFree, missing);
  resolve(library, "cuMemcpyHtoD_v2", d->cuMemcpyHtoD, missing);
  resolve(library, "cuMemcpyDtoH_v2", d->cuMemcpyDtoH, missing);
  resolve(library, "cuMemsetD8_v2", d->cuMemsetD8, missing);
  resolve(library, "cuModuleLoadData", d->cuModuleLoadData, missing);
  resolve(library, "cuModuleUnload", d->cuModuleUnload, missing);
  resolve(library, "cuModuleGetFunction", d->cuModuleGetFunction, missing);
  resolve(library, "cuFuncGetAttribute", d->cuFuncGetAttribute, missing);
  resolve(library, "cuFuncSetAttribute", d->cuFuncSetAttribute, missing);
  resolve(library, "cuLaunchKernel", d->cuLaunchKernel, missing);
  resolve(library, "cuLaunchKernelEx", d->cuLaunchKernelEx, missing);
  resolve(library, "cuGetErrorString", d->cuGetErrorString, missing);
  resolve(library, "cuGetErrorName", d->cuGetErrorName, missing);
  resolve(library, "cuMemGetInfo_v2", d->cuMemGetInfo, missing);
  resolve(library, "cuMemcpyHtoDAsync_v2", d->cuMemcpyHtoDAsync, missing);
  resolve(library, "cuMemcpyDtoHAsync_v2", d->cuMemcpyDtoHAsync, missing);
  resolve(library, "cuMemsetD8Async", d->cuMemsetD8Async, missing);
  resolve(library, "cuMemHostAlloc", d->cuMemHostAlloc, missing);
  resolve(library, "cuMemFreeHost", d->cuMemFreeHost, missing);
  resolve(library, "cuStreamCreate", d->cuStreamCreate, missing);
  resolve(library, "cuStreamDestroy_v2", d->cuStreamDestroy, missing);
  resolve(library, "cuStreamSynchronize", d->cuStreamSynchronize, missing);
  resolve(library, "cuStreamBeginCapture_v2", d->cuStreamBeginCapture, missing);
  resolve(library, "cuStreamEndCapture", d->cuStreamEndCapture, missing);
  resolve(library, "cuGraphInstantiateWithFlags", d->cuGraphInstantiate, missing);
  resolve(library, "cuGraphLaunch", d->cuGraphLaunch, missing);
  resolve(library, "cuGraphExecDestroy", d->cuGraphExecDestroy, missing);
  resolve(library, "cuGraphDestroy", d->cuGraphDestroy, missing);
  resolve(library, "cuCtxGetCurrent", d->cuCtxGetCurrent, missing);
  resolve(library, "cuEventCreate", d->cuEventCreate, missing);
  resolve(library, "cuEventDestroy_v2", d->cuEventDestroy, missing);
  resolve(library, "cuEventRecord", d->cuEventRecord, missing);
  resolve(library, "cuEventSynchronize", d->cuEventSynchronize, missing);
  resolve(library, "cuEventElapsedTime_v2", d->cuEventElapsedTime, missing);
  resolve(library, "cuStreamWaitEvent", d->cuStreamWaitEvent, missing);
  resolve(library, "cuMemcpyDtoDAsync_v2", d->cuMemcpyDtoDAsync, missing);
  if (!missing.empty()) {
    dlclose(library);
    delete d;
    return Status::errorf("libcuda.so.1: the driver has no symbol {} (a driver older than this runtime needs)",
                          missing);
  }
  DSV41_TRY(d->check(d->cuInit(0), "cuInit(0)"));
  return d;
}

Result<CudaDriver*> CudaDriver::open() {
  static std::once_flag once;
  static Result<CudaDriver*> result = Status::error("not opened");
  std::call_once(once, [] { result = load(); });
  return result;
}

Status CudaDriver::check(CUresult result, std::string_view call) const {
  if (result == CUDA_SUCCESS) return Status::ok();
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (cuGetErrorString == nullptr || cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  return Status::errorf("{}: {}: {}", call, name ? name : fmt::format("CUresult {}", static_cast<int>(result)),
                        text ? text : "unknown error");
}

Result<int> CudaDriver::device_count() const {
  int count = 0;
  DSV41_TRY(check(cuDeviceGetCount(&count), "cuDeviceGetCount"));
  return count;
}

namespace {

// The calling thread's device (use_device), and the primary contexts retained so far, by ordinal.
struct ThreadDevice {
  int ordinal = -1;
  CUdevice device = 0;
};
thread_local ThreadDevice current_device;

struct RetainedContexts {
  std::mutex mutex;
  std::vector<CUcontext> by_ordinal;
};
RetainedContexts& retained_contexts() {
  static RetainedContexts contexts;
  return contexts;
}

}  // namespace

Status CudaDriver::use_device(int ordinal) {
  CUdevice device = 0;
  DSV41_TRY(check(cuDeviceGet(&device, ordinal), fmt::format("cuDeviceGet({})", ordinal)));
  CUcontext context = nullptr;
  {
    RetainedContexts& contexts = retained_contexts();
    std::lock_guard lock(contexts.mutex);
    if (contexts.by_ordinal.size() <= static_cast<size_t>(ordinal)) contexts.by_ordinal.resize(ordinal + 1, nullptr);
    CUcontext& slot = contexts.by_ordinal[ordinal];
    if (slot == nullptr)
      DSV41_TRY(check(cuDevicePrimaryCtxRetain(&slot, device), fmt::format("cuDevicePrimaryCtxRetain(device {})", ordinal)));
    context = slot;
  }
  DSV41_TRY(check(cuCtxSetCurrent(context), fmt::format("cuCtxSetCurrent(device {})", ordinal)));
  current_device = {ordinal, device};
  return Status::ok();
}

Result<int> CudaDriver::attribute(CUdevice_attribute attr) const {
  if (current_device.ordinal < 0) return Status::error("CUDA: no device in use on this thread (use_device first)");
  int value = 0;
  DSV41_TRY(check(cuDeviceGetAttribute(&value, attr, current_device.device), fmt::format("cuDeviceGetAttribute({})", static_cast<int>(attr))));
  return value;
}

Result<std::string> CudaDriver::device_arch() const {
  DSV41_ASSIGN_OR_RETURN(int major, attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
  DSV41_ASSIGN_OR_RETURN(int minor, attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  return fmt::format("sm_{}{}", major, minor);
}

std::string CudaDriver::describe_device() const {
  if (current_device.ordinal < 0) return "no device in use";
  char name[256] = {0};
  if (cuDeviceGetName(name, sizeof(name) - 1, current_device.device) != CUDA_SUCCESS)
    std::snprintf(name, sizeof(name), "device %d", current_device.ordinal);
  int version = 0;
  if (cuDriverGetVersion(&version) != CUDA_SUCCESS) version = 0;
  auto arch = device_arch();
  return fmt::format("{} ({}, driver {}.{})", name, arch.is_ok() ? *arch : std::string("sm_?"), version / 1000,
                     (version % 1000) / 10);
}

Status CudaDriver::synchronize() const { return check(cuCtxSynchronize(), "cuCtxSynchronize"); }

Result<std::pair<size_t, size_t>> CudaDriver::memory_info() const {
  size_t free = 0, total = 0;
  DSV41_TRY(check(cuMemGetInfo(&free, &total), "cuMemGetInfo_v2"));
  return std::make_pair(free, total);
}

// ---- DeviceBuffer ----

Result<DeviceBuffer> DeviceBuffer::allocate(CudaDriver& driver, size_t bytes) {
  DeviceBuffer buffer;
  buffer.driver_ = &driver;
  buffer.bytes_ = bytes;
  if (bytes > 0) DSV41_TRY(driver.check(driver.cuMemAlloc(&buffer.ptr_, bytes), fmt::format("cuMemAlloc_v2({} bytes)", bytes)));
  return buffer;
}

Result<DeviceBuffer> DeviceBuffer::from_host(CudaDriver& driver, const void* data, size_t bytes) {
  DSV41_ASSIGN_OR_RETURN(DeviceBuffer buffer, allocate(driver, bytes));
  DSV41_TRY(buffer.upload(data, bytes));
  return buffer;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != 0 && driver_ != nullptr) (void)driver_->cuMemFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : driver_(other.driver_), ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_ != 0 && driver_ != nullptr) (void)driver_->cuMemFree(ptr_);
    driver_ = other.driver_;
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Status DeviceBuffer::check_range(std::string_view what, size_t bytes, size_t offset) const {
  if (offset > bytes_ || bytes > bytes_ - offset)
    return Status::errorf("{}: {} bytes at offset {} of a {}-byte device buffer", what, bytes, offset, bytes_);
  return Status::ok();
}

Status DeviceBuffer::upload(const void* src, size_t bytes, size_t offset) {
  DSV41_TRY(check_range("cuMemcpyHtoD_v2", bytes, offset));
  if (bytes == 0) return Status::ok();
  return driver_->check(driver_->cuMemcpyHtoD(ptr_ + offset, src, bytes), fmt::format("cuMemcpyHtoD_v2({} bytes)", bytes));
}

Status DeviceBuffer::download(void* dst, size_t bytes, size_t offset) const {
  DSV41_TRY(check_range("cuMemcpyDtoH_v2", bytes, offset));
  if (bytes == 0) return Status::ok();
  return driver_->check(driver_->cuMemcpyDtoH(dst, ptr_ + offset, bytes), fmt::format("cuMemcpyDtoH_v2({} bytes)", bytes));
}

Status DeviceBuffer::fill(uint8_t byte) {
  if (bytes_ == 0) return Status::ok();
  return driver_->check(driver_->cuMemsetD8(ptr_, byte, bytes_), fmt::format("cuMemsetD8_v2({} bytes)", bytes_));
}

}  // namespace dsv41::gpu
