// runtime/exchange.cpp — rank-ordered sums and gathers between threads, with an abort that ends every rank at once.
#include "runtime/exchange.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dsv41 {
namespace {

bool overlaps(const float* a, int64_t na, const float* b, int64_t nb) {
  return na > 0 && nb > 0 && a < b + nb && b < a + na;
}

}  // namespace

InProcessExchange::InProcessExchange(int world) : world_(world), posted_(static_cast<size_t>(std::max(world, 1))) {
  DSV41_CHECK(world >= 1);
}

bool InProcessExchange::abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (aborted_) return false;
  aborted_ = true;
  reason_ = reason;
  wake_.notify_all();
  return true;
}

bool InProcessExchange::aborted() const {
  std::lock_guard lock(mutex_);
  return aborted_;
}

std::string InProcessExchange::abort_reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

void InProcessExchange::fail(const std::string& reason) {
  abort(reason);
  throw ExchangeAborted(abort_reason());  // the first reason, whoever set it
}

void InProcessExchange::rendezvous(uint64_t& arrived, uint64_t& generation, bool abortable) {
  std::unique_lock lock(mutex_);
  // Once aborted, no abortable rendezvous can complete: a late arrival throws before counting, so the
  // ranks that are waiting never see the generation move.
  if (abortable && aborted_) throw ExchangeAborted(reason_);
  const uint64_t mine = generation;
  if (++arrived == static_cast<uint64_t>(world_)) {
    arrived = 0;
    ++generation;
    wake_.notify_all();
    return;
  }
  wake_.wait(lock, [&] { return generation != mine || (abortable && aborted_); });
  if (generation == mine) throw ExchangeAborted(reason_);
}

void InProcessExchange::check_agreement() {
  const Posted& first = posted_[0];
  for (int r = 1; r < world_; ++r) {
    const Posted& p = posted_[r];
    if (p.kind != first.kind)
      fail(fmt::format("exchange: rank 0 called {} but rank {} called {} (ranks ran different call lists)",
                       first.kind == Kind::Sum ? "sum" : "gather", r, p.kind == Kind::Sum ? "sum" : "gather"));
    if (p.n != first.n)
      fail(fmt::format("exchange {}: rank 0 has {} {} but rank {} has {}", first.kind == Kind::Sum ? "sum" : "gather",
                       first.n, first.kind == Kind::Sum ? "floats" : "rows", r, p.n));
    if (p.kind == Kind::Gather && *p.widths != *first.widths)
      fail(fmt::format("exchange gather: rank 0 has widths [{}] but rank {} has [{}]", fmt::join(*first.widths, ", "), r,
                       fmt::join(*p.widths, ", ")));
  }
}

void InProcessExchange::sum(int rank, const float* x, int64_t n, float* out) {
  DSV41_CHECK(rank >= 0 && rank < world_ && n >= 0 && !overlaps(x, n, out, n));
  posted_[rank] = {Kind::Sum, x, n, nullptr};
  rendezvous(enter_arrived_, enter_generation_, /*abortable=*/true);
  check_agreement();
  // Every rank adds in rank order with the same code, so every rank holds the same bits.
  std::copy(posted_[0].x, posted_[0].x + n, out);
  for (int r = 1; r < world_; ++r) {
    const float* xr = posted_[r].x;
    for (int64_t i = 0; i < n; ++i) out[i] += xr[i];
  }
  // Not abortable: every rank passed the first rendezvous, so every rank reaches this one, and no
  // rank may return (releasing its input) while another still reads it.
  rendezvous(leave_arrived_, leave_generation_, /*abortable=*/false);
}

void InProcessExchange::gather(int rank, const float* x, int64_t rows, const std::vector<int64_t>& widths, float* out) {
  DSV41_CHECK(rank >= 0 && rank < world_ && rows >= 0);
  DSV41_CHECK(static_cast<int>(widths.size()) == world_);
  for (int64_t w : widths) DSV41_CHECK(w >= 0);
  const int64_t total = std::accumulate(widths.begin(), widths.end(), int64_t{0});
  DSV41_CHECK(!overlaps(x, rows * widths[rank], out, rows * total));
  posted_[rank] = {Kind::Gather, x, rows, &widths};
  rendezvous(enter_arrived_, enter_generation_, /*abortable=*/true);
  check_agreement();
  int64_t column = 0;
  for (int r = 0; r < world_; ++r) {
    const int64_t width = widths[r];
    const float* xr = posted_[r].x;
    for (int64_t row = 0; row < rows; ++row)
      std::copy(xr + row * width, xr + (row + 1) * width, out + row * total + column);
    column += width;
  }
  rendezvous(leave_arrived_, leave_generation_, /*abortable=*/false);
}

}  // namespace dsv41
