// runtime/gpu/bench_events.h — a row of CUDA events recorded on a stream and the milliseconds between
// them: how `dsv41-rt bench` times replays, single launches and the streaming-read roofline.
#pragma once

#include <cuda.h>

#include <vector>

#include "common/status.h"
#include "runtime/gpu/cuda_driver.h"

namespace dsv41::gpu {

class EventRow {
 public:
  // `count` events with timing (cuEventCreate(CU_EVENT_DEFAULT)), destroyed with the row.
  static Result<EventRow> create(CudaDriver& driver, size_t count);
  ~EventRow();
  EventRow(EventRow&& other) noexcept;
  EventRow& operator=(EventRow&&) = delete;
  EventRow(const EventRow&) = delete;
  EventRow& operator=(const EventRow&) = delete;

  size_t size() const { return events_.size(); }
  Status record(size_t i, CUstream stream);
  // Waits for event `last`, then the milliseconds from event i to event i + 1 for i in [first, last).
  Result<std::vector<double>> gaps_ms(size_t first, size_t last);
  // Waits for event j, then the milliseconds from event i to event j.
  Result<double> between_ms(size_t i, size_t j);

 private:
  explicit EventRow(CudaDriver& driver) : driver_(&driver) {}
  CudaDriver* driver_;
  std::vector<CUevent> events_;
};

}  // namespace dsv41::gpu
