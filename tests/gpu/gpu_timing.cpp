// tests/gpu/gpu_timing.cpp — graph-captured timing, and the speed benchmarks' device with the runtime's streaming-read roofline (gpu_timing.h).
#include "tests/gpu/gpu_timing.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "runtime/gpu/stream_read.h"
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
  // The roofline `dsv41-rt bench` measures (one kernel for both): 3 warm-up launches, the median of 10.
  auto roof = gpu::measure_read_bandwidth(*b.driver, uint64_t{1} << 30, 3, 10);
  if (!roof.is_ok()) {
    b.error = roof.status().message();
    return b;
  }
  b.roof_gbps = roof->gb_per_s;
  std::printf("roofline: streaming read of 1 GiB at %.0f GB/s\n", b.roof_gbps);
  return b;
}

}  // namespace dsv41::gpu_test
