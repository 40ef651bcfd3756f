// runtime/gpu/stream_read.cpp — the streaming-read kernel (PTX, JITted by the driver) and its timing.
#include "runtime/gpu/stream_read.h"

#include <string>

#include "runtime/gpu/bench_events.h"

namespace dsv41::gpu {
namespace {

// Thread t of the grid reads 16-byte vectors t, t + s, t + 2s, ... (s: the grid's threads), four loads
// in flight per iteration (ld.global.nc.v4), XOR-folding them so the loads are live; the fold is
// stored only when it equals a value a zeroed buffer never gives, so nothing is written. PTX for
// sm_80, so any later device JITs it.
constexpr const char* kStreamReadPtx = R"PTX(.version 7.8
.target sm_80
.address_size 64

.visible .entry dsv41_stream_read(.param .u64 p_src, .param .u64 p_count, .param .u64 p_out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<24>;
  .reg .b64 %rd<20>;
  ld.param.u64 %rd1, [p_src];
  ld.param.u64 %rd2, [p_count];
  ld.param.u64 %rd3, [p_out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd4, %r1, %r2;
  cvt.u64.u32 %rd5, %r3;
  add.u64 %rd4, %rd4, %rd5;
  mul.wide.u32 %rd6, %r4, %r2;
  shl.b64 %rd7, %rd6, 4;
  mul.lo.u64 %rd8, %rd6, 3;
  shl.b64 %rd9, %rd6, 2;
  mov.u32 %r20, 0;
UNROLLED:
  add.u64 %rd10, %rd4, %rd8;
  setp.ge.u64 %p1, %rd10, %rd2;
  @%p1 bra TAIL;
  shl.b64 %rd11, %rd4, 4;
  add.u64 %rd12, %rd1, %rd11;
  add.u64 %rd13, %rd12, %rd7;
  add.u64 %rd14, %rd13, %rd7;
  add.u64 %rd15, %rd14, %rd7;
  ld.global.nc.v4.u32 {%r5, %r6, %r7, %r8}, [%rd12];
  ld.global.nc.v4.u32 {%r9, %r10, %r11, %r12}, [%rd13];
  ld.global.nc.v4.u32 {%r13, %r14, %r15, %r16}, [%rd14];
  ld.global.nc.v4.u32 {%r17, %r18, %r19, %r21}, [%rd15];
  xor.b32 %r5, %r5, %r6;
  xor.b32 %r7, %r7, %r8;
  xor.b32 %r9, %r9, %r10;
  xor.b32 %r11, %r11, %r12;
  xor.b32 %r13, %r13, %r14;
  xor.b32 %r15, %r15, %r16;
  xor.b32 %r17, %r17, %r18;
  xor.b32 %r19, %r19, %r21;
  xor.b32 %r5, %r5, %r7;
  xor.b32 %r9, %r9, %r11;
  xor.b32 %r13, %r13, %r15;
  xor.b32 %r17, %r17, %r19;
  xor.b32 %r5, %r5, %r9;
  xor.b32 %r13, %r13, %r17;
  xor.b32 %r5, %r5, %r13;
  xor.b32 %r20, %r20, %r5;
  add.u64 %rd4, %rd4, %rd9;
  bra UNROLLED;
TAIL:
  setp.ge.u64 %p2, %rd4, %rd2;
  @%p2 bra DONE;
  shl.b64 %rd11, %rd4, 4;
  add.u64 %rd12, %rd1, %rd11;
  ld.global.nc.v4.u32 {%r5, %r6, %r7, %r8}, [%rd12];
  xor.b32 %r5, %r5, %r6;
  xor.b32 %r7, %r7, %r8;
  xor.b32 %r5, %r5, %r7;
  xor.b32 %r20, %r20, %r5;
  add.u64 %rd4, %rd4, %rd6;
  bra TAIL;
DONE:
  setp.ne.u32 %p3, %r20, 1592324109;
  @%p3 bra END;
  st.global.u32 [%rd3], %r20;
END:
  ret;
}
)PTX";

constexpr int kThreads = 256;

}  // namespace

Result<ReadBandwidth> measure_read_bandwidth(CudaDriver& driver, uint64_t bytes, int warmup, int launches) {
  DSV41_CHECK(bytes >= 16 && launches >= 1 && warmup >= 0);
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
}

}  // namespace dsv41::gpu
