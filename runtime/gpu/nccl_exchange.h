// runtime/gpu/nccl_exchange.h — the CUDA backend's exchange between rank processes: NCCL collectives and a rank-ordered sum, only enqueued, so the phase graphs capture them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/gpu/device_exchange.h"
#include "runtime/gpu/nccl_comm.h"

namespace dsv41::gpu {

// One rank's block of a gather: rank `root` broadcasts `count` floats, which land at `offset` floats
// into the rank-major staging.
struct GatherBlock {
  int root = 0;
  uint64_t offset = 0, count = 0;
};
// Every rank's [rows, widths[k]] block, in rank order, packed (the layout kernels/exchange_gather.cuh reads).
std::vector<GatherBlock> gather_blocks(int64_t rows, const std::vector<int64_t>& widths);

// sum: ncclAllGather of every rank's n floats into staging (world × n, rank-major), then the
// rank-ordered sum kernel writes x = ((x_0 + x_1) + x_2) + ... : the CPU exchange's order and F32
// arithmetic, so every rank holds the same bits, and the CPU backend's bits given the same partials.
// gather: the ranks' widths differ (uneven splits), which ncclAllGather (equal counts) cannot carry
// without padding, so one grouped ncclBroadcast per rank places each block exactly where the
// exchange_gather kernel reads it. Nothing waits on the host: both are captured in the phase graph.
class NcclExchange final : public DeviceExchange {
 public:
  // Launches the rank-ordered sum on `stream` (the PTX kernel; tests put a host loop in its place).
  using SumKernel = std::function<Status(CUdeviceptr gathered, CUdeviceptr out, int64_t n, int world, CUstream stream)>;
  // The runtime's PTX sum kernel, loaded into the calling thread's current context.
  static Result<SumKernel> load_sum_kernel(CudaDriver& driver);
  // Whether this build has it (nvcc was found at build time); without it no exchange runs on the device.
  static bool sum_kernel_built();

  NcclExchange(NcclComm& comm, SumKernel sum_kernel) : comm_(comm), sum_kernel_(std::move(sum_kernel)) {}
  // Eager runs only (a graph cannot wait on the host): synchronise `stream` around every exchange and
  // add its wall time, so the exchange cost per step can be read without a profiler.
  void time_exchanges(CudaDriver& driver) { timing_driver_ = &driver; }
  struct Timing {
    int64_t exchanges = 0;
    double seconds = 0;
  };
  const Timing& timing() const { return timing_; }
  bool host_side() const override { return false; }
  std::string describe() const override { return "NCCL, inside the graphs (all-gather and a rank-ordered sum)"; }
  Status enqueue_sum(int rank, CUdeviceptr x, int64_t n, CUdeviceptr staging, CUstream stream) override;
  Status enqueue_gather(int rank, CUdeviceptr x, int64_t rows, const std::vector<int64_t>& widths, CUdeviceptr staging,
                        CUstream stream) override;
  // Aborts the communicator: this rank's pending collectives end (with an error) instead of waiting.
  void abort(const std::string& reason) override { comm_.abort(); }

 private:
  Status check_rank(int rank, const char* what) const;
  Status broadcast_blocks(CUdeviceptr x, int64_t rows, const std::vector<int64_t>& widths, CUdeviceptr staging,
                          CUstream stream);
  Status timed(CUstream stream, const std::function<Status()>& enqueue);
  NcclComm& comm_;
  SumKernel sum_kernel_;
  CudaDriver* timing_driver_ = nullptr;
  Timing timing_;
};

}  // namespace dsv41::gpu
