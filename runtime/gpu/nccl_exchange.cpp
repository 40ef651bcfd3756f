// runtime/gpu/nccl_exchange.cpp — the NCCL all-gather + rank-ordered sum, the grouped broadcasts of a gather, and the PTX sum kernel's launch.
#include "runtime/gpu/nccl_exchange.h"

#include <algorithm>
#include <chrono>

#include <fmt/ranges.h>

#ifdef DSV41_HAVE_EXCHANGE_PTX
#include "exchange_kernels_ptx.inc"
#endif

namespace dsv41::gpu {

std::vector<GatherBlock> gather_blocks(int64_t rows, const std::vector<int64_t>& widths) {
  std::vector<GatherBlock> blocks;
  uint64_t offset = 0;
  for (size_t k = 0; k < widths.size(); ++k) {
    const uint64_t count = static_cast<uint64_t>(rows * widths[k]);
    blocks.push_back({static_cast<int>(k), offset, count});
    offset += count;
  }
  return blocks;
}

bool NcclExchange::sum_kernel_built() {
#ifdef DSV41_HAVE_EXCHANGE_PTX
  return true;
#else
  return false;
#endif
}

Result<NcclExchange::SumKernel> NcclExchange::load_sum_kernel(CudaDriver& driver) {
#ifndef DSV41_HAVE_EXCHANGE_PTX
  return Status::error("the NCCL exchange's sum kernel is missing: dsv41-rt was built without nvcc "
                       "(runtime/CMakeLists.txt compiles runtime/gpu/exchange_kernels.cu to PTX with it)");
#else
  // The module stays loaded for the process: graphs captured with the kernel outlive any caller.
  CUmodule module = nullptr;
  DSV41_TRY(driver.check(driver.cuModuleLoadData(&module, kExchangeKernelsPtx),
                         "cuModuleLoadData(runtime/gpu/exchange_kernels.cu PTX)"));
  CUfunction function = nullptr;
  DSV41_TRY(driver.check(driver.cuModuleGetFunction(&function, module, "dsv41_rank_ordered_sum"),
                         "cuModuleGetFunction(dsv41_rank_ordered_sum)"));
  CudaDriver* d = &driver;
  return SumKernel([d, function](CUdeviceptr gathered, CUdeviceptr out, int64_t n, int world, CUstream stream) -> Status {
    if (n == 0) return Status::ok();
    constexpr long long kThreads = 256, kMaxBlocks = 1024;  // a grid-stride loop covers the rest
    const unsigned blocks = static_cast<unsigned>(std::min<long long>(kMaxBlocks, (n + kThreads - 1) / kThreads));
    long long count = n;
    void* params[] = {&gathered, &out, &count, &world};
    return d->check(d->cuLaunchKernel(function, blocks, 1, 1, kThreads, 1, 1, 0, stream, params, nullptr),
                    fmt::format("cuLaunchKernel(dsv41_rank_ordered_sum, {} floats x {} ranks)", n, world));
  });
#endif
}

Status NcclExchange::check_rank(int rank, const char* what) const {
  if (rank != comm_.rank())
    return Status::errorf("NCCL exchange {}: called for rank {}, but this process's communicator is rank {} of {}", what,
                          rank, comm_.rank(), comm_.world());
  return Status::ok();
}

Status NcclExchange::timed(CUstream stream, const std::function<Status()>& enqueue) {
  if (!timing_driver_) return enqueue();
  CudaDriver& d = *timing_driver_;
  DSV41_TRY(d.check(d.cuStreamSynchronize(stream), "cuStreamSynchronize (before a timed exchange)"));
  const auto start = std::chrono::steady_clock::now();
  DSV41_TRY(enqueue());
  DSV41_TRY(d.check(d.cuStreamSynchronize(stream), "cuStreamSynchronize (after a timed exchange)"));
  timing_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++timing_.exchanges;
  return Status::ok();
}

Status NcclExchange::enqueue_sum(int rank, CUdeviceptr x, int64_t n, CUdeviceptr staging, CUstream stream) {
  DSV41_TRY(check_rank(rank, "sum"));
  if (n == 0) return Status::ok();
  return timed(stream, [&]() -> Status {
    const NcclLibrary& nccl = comm_.library();
    DSV41_TRY(nccl.check(nccl.ncclAllGather(reinterpret_cast<const void*>(x), reinterpret_cast<void*>(staging),
                                            static_cast<size_t>(n), nccl::Float32, comm_.get(), stream),
                         fmt::format("ncclAllGather({} floats per rank, world {})", n, comm_.world())));
    return sum_kernel_(staging, x, n, comm_.world(), stream);
  });
}

Status NcclExchange::enqueue_gather(int rank, CUdeviceptr x, int64_t rows, const std::vector<int64_t>& widths,
                                    CUdeviceptr staging, CUstream stream) {
  DSV41_TRY(check_rank(rank, "gather"));
  if (static_cast<int>(widths.size()) != comm_.world() || std::any_of(widths.begin(), widths.end(), [](int64_t w) { return w < 0; }))
    return Status::errorf("NCCL exchange gather: widths [{}] for a world of {}", fmt::join(widths, ", "), comm_.world());
  return timed(stream, [&] { return broadcast_blocks(x, rows, widths, staging, stream); });
}

Status NcclExchange::broadcast_blocks(CUdeviceptr x, int64_t rows, const std::vector<int64_t>& widths,
                                      CUdeviceptr staging, CUstream stream) {
  const NcclLibrary& nccl = comm_.library();
  DSV41_TRY(nccl.check(nccl.ncclGroupStart(), "ncclGroupStart (gather)"));
  Status status = Status::ok();
  for (const GatherBlock& b : gather_blocks(rows, widths)) {
    if (b.count == 0) continue;
    // The root sends its x; every rank (the root too) receives into its staging block.
    void* recv = reinterpret_cast<void*>(staging + b.offset * sizeof(float));
    status = nccl.check(nccl.ncclBroadcast(reinterpret_cast<const void*>(x), recv, b.count, nccl::Float32, b.root,
                                           comm_.get(), stream),
                        fmt::format("ncclBroadcast(rank {}'s {} rows x {} floats)", b.root, rows, widths[b.root]));
    if (!status.is_ok()) break;
  }
  // The group ends whatever happened inside it: NCCL requires every ncclGroupStart be matched.
  const Status ended = nccl.check(nccl.ncclGroupEnd(), "ncclGroupEnd (gather)");
  DSV41_TRY(status);
  return ended;
}

}  // namespace dsv41::gpu
