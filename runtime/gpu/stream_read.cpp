// runtime/gpu/stream_read.cpp — the roofline's timing of the streaming-read kernel (stream_read_kernel.cu, PTX JITted by the driver).
#include "runtime/gpu/stream_read.h"

#include <string>

#include "runtime/gpu/bench_events.h"

#ifdef DSV41_HAVE_EXCHANGE_PTX
#include "stream_read_kernel_ptx.inc"  // kStreamReadPtx, from stream_read_kernel.cu
#endif

namespace dsv41::gpu {
namespace {

constexpr int kThreads = 256;

}  // namespace

Result<ReadBandwidth> measure_read_bandwidth(CudaDriver& driver, uint64_t bytes, int warmup, int launches) {
  DSV41_CHECK(bytes >= 16 && launches >= 1 && warmup >= 0);
#ifndef DSV41_HAVE_EXCHANGE_PTX
  return Status::error("the roofline's streaming-read kernel is missing: dsv41-rt was built without nvcc "
                       "(runtime/CMakeLists.txt compiles runtime/gpu/stream_read_kernel.cu to PTX with it)");
#else
  ReadBandwidth r;
  r.bytes = bytes / 16 * 16;
  DSV41_ASSIGN_OR_RETURN(const int sms, driver.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  DSV41_ASSIGN_OR_RETURN(const int per_sm, driver.attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR));
  r.threads = kThreads;
  r.blocks = sms * (per_sm / kThreads > 0 ? per_sm / kThreads : 1);  // every SM full

  DSV41_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(driver, r.bytes));
  DSV41_TRY(buffer.fill(0));
  DSV41_TRY(driver.synchronize());  // the fill ran on the legacy stream, which the one below does not wait for
  DSV41_ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::allocate(driver, 4));
  CUmodule module = nullptr;
  DSV41_TRY(driver.check(driver.cuModuleLoadData(&module, kStreamReadPtx), "cuModuleLoadData(stream-read PTX)"));
  struct Unload {
    CudaDriver& d;
    CUmodule m;
    ~Unload() { (void)d.cuModuleUnload(m); }
  } unload{driver, module};
  CUfunction function = nullptr;
  DSV41_TRY(driver.check(driver.cuModuleGetFunction(&function, module, "dsv41_stream_read"),
                         "cuModuleGetFunction(dsv41_stream_read)"));
  CUstream stream = nullptr;
  DSV41_TRY(driver.check(driver.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate(stream read)"));
  struct Destroy {
    CudaDriver& d;
    CUstream s;
    ~Destroy() { (void)d.cuStreamDestroy(s); }
  } destroy{driver, stream};

  CUdeviceptr src = buffer.ptr(), dst = out.ptr();
  uint64_t count = r.bytes / 16;
  void* params[] = {&src, &count, &dst};
  auto launch = [&]() {
    return driver.check(driver.cuLaunchKernel(function, static_cast<unsigned>(r.blocks), 1, 1, kThreads, 1, 1, 0, stream,
                                              params, nullptr),
                        fmt::format("cuLaunchKernel(dsv41_stream_read, {} blocks of {})", r.blocks, kThreads));
  };
  for (int i = 0; i < warmup; ++i) DSV41_TRY(launch());
  DSV41_ASSIGN_OR_RETURN(EventRow events, EventRow::create(driver, static_cast<size_t>(launches) + 1));
  DSV41_TRY(events.record(0, stream));
  for (int i = 0; i < launches; ++i) {
    DSV41_TRY(launch());
    DSV41_TRY(events.record(static_cast<size_t>(i) + 1, stream));
  }
  DSV41_ASSIGN_OR_RETURN(std::vector<double> ms, events.gaps_ms(0, static_cast<size_t>(launches)));
  DSV41_TRY(driver.check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize(stream read)"));
  DSV41_ASSIGN_OR_RETURN(r.ms, time_stats(ms));
  r.gb_per_s = static_cast<double>(r.bytes) / (r.ms.median * 1e-3) / 1e9;
  r.best_gb_per_s = static_cast<double>(r.bytes) / (r.ms.min * 1e-3) / 1e9;
  return r;
#endif
}

}  // namespace dsv41::gpu
