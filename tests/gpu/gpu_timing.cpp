// tests/gpu/gpu_timing.cpp — graph-captured timing and the streaming-read roofline (gpu_timing.h).
#include "tests/gpu/gpu_timing.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "compiler/kernels/kernel_build.h"
#include "tests/gpu/gpu_op_device.h"
#include "tests/gpu/gpu_op_values.h"

namespace dsv41::gpu_test {

Result<double> time_per_call(gpu::CudaDriver& d, int count, int replays,
                             const std::function<Status(int i, CUstream stream)>& enqueue) {
  CUstream stream = nullptr;
  DSV41_TRY(d.check(d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate(timing)"));
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  auto cleanup = [&] {
    if (exec) d.cuGraphExecDestroy(exec);
    if (graph) d.cuGraphDestroy(graph);
    d.cuStreamDestroy(stream);
  };
  Status st = d.check(d.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  for (int i = 0; i < count && st.is_ok(); ++i) st = enqueue(i, stream);
  const Status ended = d.check(d.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture(timing)");
  if (st.is_ok()) st = ended;
  if (st.is_ok()) st = d.check(d.cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate(timing)");
  std::vector<double> us;
  for (int r = 0; r <= replays && st.is_ok(); ++r) {
    const auto start = std::chrono::steady_clock::now();
    st = d.check(d.cuGraphLaunch(exec, stream), "cuGraphLaunch(timing)");
    if (st.is_ok()) st = d.check(d.cuStreamSynchronize(stream), "cuStreamSynchronize(timing)");
    if (r > 0)  // replay 0 warms up
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / count);
  }
  cleanup();
  if (!st.is_ok()) return st;
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

Result<double> time_call(gpu::CudaDriver& d, gpu::KernelLauncher& launcher, int32_t kernel, const Call& call,
                         const CallEnv& env, const std::vector<gpu::LaunchBindings>& bindings, int count, int replays) {
  DSV41_ASSIGN_OR_RETURN(LaunchDims dims, launch_dims(call, env));
  Call launched = call;
  launched.launch.block = dims.block;
  std::copy(dims.grid, dims.grid + 3, launched.launch.grid);
  return time_per_call(d, count, replays, [&](int i, CUstream stream) {
    return launcher.launch(kernel, launched, env, bindings[i % bindings.size()], stream);
  });
}

namespace {
// Each thread reads 16-byte vectors a grid apart and folds them into one word, written only when it
// is a value no input has (never), so the loads cannot be dropped.
constexpr const char* kStreamSource = R"(
extern "C" __global__ void __launch_bounds__(512) dsv41_stream_read(const uint4* p, unsigned long long n, unsigned* sink) {
  unsigned acc = 0;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], e = p[i + 3 * stride];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ e.x ^ e.y ^ e.z ^ e.w;
  }
  for (; i < n; i += stride) { const uint4 a = p[i]; acc ^= a.x ^ a.y ^ a.z ^ a.w; }
  if (acc == 0x9E3779B9u) *sink = acc;
}
)";
}  // namespace

Result<double> streaming_read_gbps(gpu::CudaDriver& d, const std::string& arch, size_t bytes) {
  DSV41_ASSIGN_OR_RETURN(CompiledKernel k, compile_source(kStreamSource, "dsv41_stream_read", arch, "stream_read"));
  CUmodule module = nullptr;
  DSV41_TRY(d.check(d.cuModuleLoadData(&module, k.cubin.data()), "cuModuleLoadData(stream_read)"));
  CUfunction f = nullptr;
  DSV41_TRY(d.check(d.cuModuleGetFunction(&f, module, "dsv41_stream_read"), "cuModuleGetFunction(stream_read)"));
  DSV41_ASSIGN_OR_RETURN(gpu::DeviceBuffer buf, gpu::DeviceBuffer::allocate(d, bytes));
  DSV41_ASSIGN_OR_RETURN(gpu::DeviceBuffer sink, gpu::DeviceBuffer::allocate(d, 4));
  DSV41_TRY(buf.fill(1));
  CUdeviceptr p = buf.ptr(), s = sink.ptr();
  unsigned long long n = bytes / 16;
  void* params[] = {&p, &n, &s};
  DSV41_ASSIGN_OR_RETURN(int sms, d.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  auto us = time_per_call(d, 10, 5, [&](int, CUstream stream) {
    return d.check(d.cuLaunchKernel(f, static_cast<unsigned>(sms * 4), 1, 1, 512, 1, 1, 0, stream, params, nullptr),
                   "cuLaunchKernel(stream_read)");
  });
  d.cuModuleUnload(module);
  if (!us.is_ok()) return us.status();
  return bytes / *us / 1e3;
}

BenchDevice bench_device() {
  BenchDevice b;
  if (!env_text("DSV41_GPU_BENCH")) {
    b.skip = "a measurement: set DSV41_GPU_BENCH=1";
    return b;
  }
  GpuSetup s = gpu_setup();
  b.skip = !s.skip.empty() ? s.skip : !s.device ? "needs the GPU" : "";
  if (!b.skip.empty()) return b;
  b.driver = s.device->driver;
  b.arch = s.target.arch;
  auto roof = streaming_read_gbps(*b.driver, b.arch, size_t{1} << 30);
  if (!roof.is_ok()) {
    b.error = roof.status().message();
    return b;
  }
  b.roof_gbps = *roof;
  std::printf("roofline: streaming read of 1 GiB at %.0f GB/s\n", b.roof_gbps);
  return b;
}

}  // namespace dsv41::gpu_test
