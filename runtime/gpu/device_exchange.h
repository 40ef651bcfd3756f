// runtime/gpu/device_exchange.h — the exchanges of the CUDA backend, behind an interface so an NCCL
// exchange (ranks that are processes) can take the place of the in-process one.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/exchange.h"
#include "runtime/gpu/cuda_driver.h"

namespace dsv41::gpu {

class GroupExchange;

class DeviceExchange {
 public:
  virtual ~DeviceExchange() = default;
  // Whether the exchange runs on the host between graph segments (it cannot be captured); an
  // exchange that can be captured (NCCL) returns false and is enqueued inside the graph.
  virtual bool host_side() const = 0;
  // How the exchange runs, for the boot report ("host-staged ...", "NCCL ...", "on the device ...").
  virtual std::string describe() const { return host_side() ? "on the host" : "inside the graphs"; }
  // Ranks that are threads on one GPU (device_exchange_group.h): the sessions join one graph per
  // phase for the whole world instead of capturing their own. Null for every other exchange.
  virtual GroupExchange* as_group() { return nullptr; }

  // Host-side exchanges (host_side() true) synchronise `stream`.
  // In place: x (F32, n values on `stream`) becomes Σ_ranks x in rank order, the same bits on every rank.
  virtual Status sum(int rank, CUdeviceptr x, int64_t n, CUstream stream);
  // x is F32 [rows, widths[rank]]; out becomes F32 [rows, Σ widths], every rank's columns in rank order.
  virtual Status gather(int rank, CUdeviceptr x, int64_t rows, const std::vector<int64_t>& widths, CUdeviceptr out,
                        CUstream stream);

  // Captured exchanges (host_side() false): only enqueued on `stream` (no host wait), so a graph can hold them.
  // sum: x (n floats) becomes the rank-ordered sum; `staging` holds world × n floats.
  virtual Status enqueue_sum(int rank, CUdeviceptr x, int64_t n, CUdeviceptr staging, CUstream stream);
  // gather: `staging` becomes every rank's [rows, widths[k]] block in rank order (rank-major, Σ widths × rows
  // floats): the layout the exchange_gather kernel (kernels/exchange_gather.cuh) permutes into its out.
  virtual Status enqueue_gather(int rank, CUdeviceptr x, int64_t rows, const std::vector<int64_t>& widths,
                                CUdeviceptr staging, CUstream stream);
  // Wakes every rank blocked in an exchange; they fail with `reason` (the first reason is kept).
  virtual void abort(const std::string& reason) = 0;
};

// Ranks that are threads of one process: each rank copies its partial to the host, the ranks meet in
// an InProcessExchange (the CPU backend's own rank-ordered sum and gather, so the bits equal the CPU
// backend's), and each copies the result back. Synchronises `stream` first.
//
// Why the host: ranks on one GPU share a context but each replays its own graph on its own stream; a
// device-side rendezvous between separately launched graphs would need cross-graph events or spin
// waits, while a host barrier between graph segments is simple and obviously correct. The price is a
// device-host round trip per exchange (two per layer), which world 1 never pays (no exchange there).
class HostStagedExchange final : public DeviceExchange {
 public:
  HostStagedExchange(CudaDriver& driver, int world) : driver_(driver), exchange_(world) {}
  bool host_side() const override { return true; }
  std::string describe() const override {
    return "host-staged: each exchange copies through host memory between graph segments (--exchange host)";
  }
  Status sum(int rank, CUdeviceptr x, int64_t n, CUstream stream) override;
  Status gather(int rank, CUdeviceptr x, int64_t rows, const std::vector<int64_t>& widths, CUdeviceptr out,
                CUstream stream) override;
  void abort(const std::string& reason) override { exchange_.abort(reason); }
  int world() const { return exchange_.world(); }

 private:
  Status download(CUdeviceptr x, std::vector<float>& host, CUstream stream);
  Status upload(const std::vector<float>& host, CUdeviceptr out, CUstream stream);
  CudaDriver& driver_;
  InProcessExchange exchange_;
};

}  // namespace dsv41::gpu
