// runtime/exchange.h — the in-process exchange: ranks that are threads of one process meet at a rendezvous.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/cpu/op_context.h"

namespace dsv41 {

// Thrown by a collective once the exchange has been aborted (by a failing rank, or by a collective
// whose ranks disagree on sizes). what() is the abort reason: the one message of the failure.
// Sessions catch it and turn it into a failed Status.
class ExchangeAborted : public std::runtime_error {
 public:
  explicit ExchangeAborted(const std::string& reason) : std::runtime_error(reason) {}
};

// `world` ranks, each a thread of this process, call every collective in the same order. Each rank
// publishes a pointer to its input, all meet, each computes its own output from every rank's input
// in rank order (so every rank gets the same bits), and all meet again before anyone returns, so no
// input is released while another rank still reads it. Reusable for any number of calls.
class InProcessExchange : public cpu::Exchange {
 public:
  explicit InProcessExchange(int world);

  int world() const { return world_; }
  // out = x(rank 0) + x(rank 1) + ..., n floats; out must not overlap x.
  void sum(int rank, const float* x, int64_t n, float* out) override;
  // x is [rows, widths[rank]]; out is [rows, Σ widths], each rank's columns in rank order.
  void gather(int rank, const float* x, int64_t rows, const std::vector<int64_t>& widths, float* out) override;

  // Ends every collective in progress and every later one: waiting ranks wake and throw
  // ExchangeAborted(reason). The first reason is kept; returns true for the call that set it.
  bool abort(const std::string& reason);
  bool aborted() const;
  std::string abort_reason() const;

 private:
  enum class Kind : uint8_t { Sum, Gather };
  struct Posted {
    Kind kind = Kind::Sum;
    const float* x = nullptr;
    int64_t n = 0;  // sum: floats; gather: rows
    const std::vector<int64_t>* widths = nullptr;
  };

  // Blocks until all ranks arrive. `abortable`: an abort wakes the waiters, who throw; a rendezvous
  // that has completed for one rank has completed for all (no rank is left half-way through).
  void rendezvous(uint64_t& arrived, uint64_t& generation, bool abortable);
  [[noreturn]] void fail(const std::string& reason);
  // Refuses a collective whose ranks disagree (kind, sizes): every rank sees the same posts and fails alike.
  void check_agreement();

  const int world_;
  std::vector<Posted> posted_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  uint64_t enter_arrived_ = 0, enter_generation_ = 0;
  uint64_t leave_arrived_ = 0, leave_generation_ = 0;
  bool aborted_ = false;
  std::string reason_;
};

}  // namespace dsv41
