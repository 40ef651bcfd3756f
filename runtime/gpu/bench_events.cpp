// runtime/gpu/bench_events.cpp — event creation, recording and elapsed times, every CUresult a Status.
#include "runtime/gpu/bench_events.h"

#include <utility>

namespace dsv41::gpu {

Result<EventRow> EventRow::create(CudaDriver& driver, size_t count) {
  EventRow row(driver);
  row.events_.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    CUevent e = nullptr;
    DSV41_TRY(driver.check(driver.cuEventCreate(&e, CU_EVENT_DEFAULT), fmt::format("cuEventCreate(event {} of {})", i, count)));
    row.events_.push_back(e);
  }
  return row;
}

EventRow::~EventRow() {
  for (CUevent e : events_) (void)driver_->cuEventDestroy(e);
}

EventRow::EventRow(EventRow&& other) noexcept : driver_(other.driver_), events_(std::exchange(other.events_, {})) {}

Status EventRow::record(size_t i, CUstream stream) {
  DSV41_CHECK(i < events_.size());
  return driver_->check(driver_->cuEventRecord(events_[i], stream), fmt::format("cuEventRecord(event {})", i));
}

Result<double> EventRow::between_ms(size_t i, size_t j) {
  DSV41_CHECK(i < events_.size() && j < events_.size());
  DSV41_TRY(driver_->check(driver_->cuEventSynchronize(events_[j]), fmt::format("cuEventSynchronize(event {})", j)));
  float ms = 0;
  DSV41_TRY(driver_->check(driver_->cuEventElapsedTime(&ms, events_[i], events_[j]),
                           fmt::format("cuEventElapsedTime_v2(event {} to {})", i, j)));
  return static_cast<double>(ms);
}

Result<std::vector<double>> EventRow::gaps_ms(size_t first, size_t last) {
  std::vector<double> gaps;
  for (size_t i = first; i < last; ++i) {
    DSV41_ASSIGN_OR_RETURN(const double ms, between_ms(i, i + 1));
    gaps.push_back(ms);
  }
  return gaps;
}

}  // namespace dsv41::gpu
