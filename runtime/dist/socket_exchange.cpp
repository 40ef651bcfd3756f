// runtime/dist/socket_exchange.cpp — rank-ordered sums and gathers through rank 0, each frame's sizes checked against the caller's.
#include "runtime/dist/socket_exchange.h"

#include <algorithm>
#include <numeric>

#include <fmt/ranges.h>

#include "runtime/exchange.h"

namespace dsv41::dist {

void SocketExchange::fail(const Status& status) {
  control_.fail(rank_reason(control_.rank(), status.message()));
  throw ExchangeAborted(status.message());
}

void SocketExchange::send_and_await_result(FrameType type, std::vector<uint8_t> payload, const char* what,
                                           uint64_t count, float* out) {
  Link& leader = control_.link(0);
  if (Status sent = leader.send(type, std::move(payload)); !sent.is_ok()) fail(sent);
  auto frame = leader.receive(FrameType::ExchangeResult);
  if (!frame.is_ok()) throw ExchangeAborted(frame.status().message());
  PayloadReader r(frame->payload, leader.peer() + ": ExchangeResult of a " + what);
  r.f32s("values", count, out);
  if (Status s = r.finish(); !s.is_ok()) fail(s);
}

void SocketExchange::send_result(const float* out, uint64_t count) {
  const std::vector<uint8_t> result = PayloadWriter().f32s(out, count).take();
  for (int r = 1; r < control_.world(); ++r)
    if (Status s = control_.link(r).send(FrameType::ExchangeResult, result); !s.is_ok()) fail(s);
}

void SocketExchange::sum(int rank, const float* x, int64_t n, float* out) {
  DSV41_CHECK(rank == control_.rank() && n >= 0);
  const uint64_t count = static_cast<uint64_t>(n);
  if (!control_.leader())
    return send_and_await_result(FrameType::ExchangeSum, PayloadWriter().f32s(x, count).take(), "sum", count, out);
  std::copy(x, x + n, out);
  std::vector<float> partial(count);
  for (int r = 1; r < control_.world(); ++r) {
    Link& follower = control_.link(r);
    auto frame = follower.receive(FrameType::ExchangeSum);
    if (!frame.is_ok()) throw ExchangeAborted(frame.status().message());
    PayloadReader reader(frame->payload, follower.peer() + ": ExchangeSum (rank 0 sums " + std::to_string(n) + " floats)");
    reader.f32s("values", count, partial.data());
    if (Status s = reader.finish(); !s.is_ok()) fail(s);
    // The same order and arithmetic as InProcessExchange: rank 0's values, then + each rank in turn.
    for (uint64_t i = 0; i < count; ++i) out[i] += partial[i];
  }
  send_result(out, count);
}

void SocketExchange::gather(int rank, const float* x, int64_t rows, const std::vector<int64_t>& widths, float* out) {
  DSV41_CHECK(rank == control_.rank() && rows >= 0 && static_cast<int>(widths.size()) == control_.world());
  const int64_t total = std::accumulate(widths.begin(), widths.end(), int64_t{0});
  const uint64_t result_count = static_cast<uint64_t>(rows * total);
  if (!control_.leader()) {
    PayloadWriter w;
    w.u64(static_cast<uint64_t>(rows)).i64s(widths).f32s(x, static_cast<uint64_t>(rows * widths[rank]));
    return send_and_await_result(FrameType::ExchangeGather, w.take(), "gather", result_count, out);
  }
  auto place = [&](int r, const float* xr) {
    const int64_t column = std::accumulate(widths.begin(), widths.begin() + r, int64_t{0});
    for (int64_t row = 0; row < rows; ++row)
      std::copy(xr + row * widths[r], xr + (row + 1) * widths[r], out + row * total + column);
  };
  place(0, x);
  for (int r = 1; r < control_.world(); ++r) {
    Link& follower = control_.link(r);
    auto frame = follower.receive(FrameType::ExchangeGather);
    if (!frame.is_ok()) throw ExchangeAborted(frame.status().message());
    PayloadReader reader(frame->payload, follower.peer() + ": ExchangeGather");
    const uint64_t their_rows = reader.u64("rows");
    const std::vector<int64_t> their_widths = reader.i64s("widths");
    if (their_rows != static_cast<uint64_t>(rows) || their_widths != widths)
      fail(Status::errorf("exchange gather: rank 0 has {} rows of widths [{}] but {} has {} rows of widths [{}]", rows,
                          fmt::join(widths, ", "), follower.peer(), their_rows, fmt::join(their_widths, ", ")));
    std::vector<float> columns(static_cast<size_t>(rows * widths[r]));
    reader.f32s("values", columns.size(), columns.data());
    if (Status s = reader.finish(); !s.is_ok()) fail(s);
    place(r, columns.data());
  }
  send_result(out, result_count);
}

}  // namespace dsv41::dist
