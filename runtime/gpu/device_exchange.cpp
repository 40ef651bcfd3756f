// runtime/gpu/device_exchange.cpp — the host-staged exchange: device → host, the in-process rendezvous, host → device.
#include "runtime/gpu/device_exchange.h"

#include <numeric>

namespace dsv41::gpu {

// The kind an exchange is not: a programming error of the session (it binds by host_side()), reported as a Status.
Status DeviceExchange::sum(int, CUdeviceptr, int64_t n, CUstream) {
  return Status::errorf("exchange sum of {} floats: this exchange is captured (enqueue_sum), not host-side", n);
}
Status DeviceExchange::gather(int, CUdeviceptr, int64_t rows, const std::vector<int64_t>&, CUdeviceptr, CUstream) {
  return Status::errorf("exchange gather of {} rows: this exchange is captured (enqueue_gather), not host-side", rows);
}
Status DeviceExchange::enqueue_sum(int, CUdeviceptr, int64_t n, CUdeviceptr, CUstream) {
  return Status::errorf("exchange sum of {} floats: this exchange runs on the host, it cannot be captured", n);
}
Status DeviceExchange::enqueue_gather(int, CUdeviceptr, int64_t rows, const std::vector<int64_t>&, CUdeviceptr,
                                      CUstream) {
  return Status::errorf("exchange gather of {} rows: this exchange runs on the host, it cannot be captured", rows);
}

Status HostStagedExchange::download(CUdeviceptr x, std::vector<float>& host, CUstream stream) {
  // Stream-ordered after the rank's work (no legacy-stream copy: other ranks may be capturing).
  if (!host.empty())
    DSV41_TRY(driver_.check(driver_.cuMemcpyDtoHAsync(host.data(), x, host.size() * sizeof(float), stream),
                            fmt::format("cuMemcpyDtoHAsync_v2(exchange input, {} floats)", host.size())));
  return driver_.check(driver_.cuStreamSynchronize(stream), "cuStreamSynchronize (exchange input)");
}

Status HostStagedExchange::upload(const std::vector<float>& host, CUdeviceptr out, CUstream stream) {
  if (host.empty()) return Status::ok();
  // On the rank's stream (which does not wait for the legacy one), then waited for: the host vector goes on return.
  DSV41_TRY(driver_.check(driver_.cuMemcpyHtoDAsync(out, host.data(), host.size() * sizeof(float), stream),
                          fmt::format("cuMemcpyHtoDAsync_v2(exchange output, {} floats)", host.size())));
  return driver_.check(driver_.cuStreamSynchronize(stream), "cuStreamSynchronize (after an exchange)");
}

Status HostStagedExchange::sum(int rank, CUdeviceptr x, int64_t n, CUstream stream) {
  std::vector<float> partial(static_cast<size_t>(n)), total(static_cast<size_t>(n));
  DSV41_TRY(download(x, partial, stream));
  try {
    exchange_.sum(rank, partial.data(), n, total.data());
  } catch (const ExchangeAborted& e) {
    return Status::errorf("exchange aborted: {}", e.what());
  }
  return upload(total, x, stream);
}

Status HostStagedExchange::gather(int rank, CUdeviceptr x, int64_t rows, const std::vector<int64_t>& widths,
                                  CUdeviceptr out, CUstream stream) {
  const int64_t total = std::accumulate(widths.begin(), widths.end(), int64_t{0});
  if (static_cast<int>(widths.size()) != exchange_.world() || rank < 0 || rank >= exchange_.world())
    return Status::errorf("exchange gather: {} widths for a world of {} (rank {})", widths.size(), exchange_.world(), rank);
  std::vector<float> local(static_cast<size_t>(rows * widths[rank])), all(static_cast<size_t>(rows * total));
  DSV41_TRY(download(x, local, stream));
  try {
    exchange_.gather(rank, local.data(), rows, widths, all.data());
  } catch (const ExchangeAborted& e) {
    return Status::errorf("exchange aborted: {}", e.what());
  }
  return upload(all, out, stream);
}

}  // namespace dsv41::gpu
