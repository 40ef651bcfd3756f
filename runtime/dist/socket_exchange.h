// runtime/dist/socket_exchange.h — cpu::Exchange between rank processes over the control links: a star through rank 0.
#pragma once

#include "runtime/cpu/op_context.h"
#include "runtime/dist/control.h"

namespace dsv41::dist {

// Each follower sends its input to rank 0; rank 0 sums (or concatenates) every rank's input in rank
// order with the same arithmetic as InProcessExchange, and sends the result back, so every rank holds
// the same bits as in-process ranks would. A failure (a peer gone, ranks disagreeing on sizes) fails
// the world through Control and throws ExchangeAborted with the reason.
class SocketExchange : public cpu::Exchange {
 public:
  explicit SocketExchange(Control& control) : control_(control) {}
  void sum(int rank, const float* x, int64_t n, float* out) override;
  void gather(int rank, const float* x, int64_t rows, const std::vector<int64_t>& widths, float* out) override;

 private:
  [[noreturn]] void fail(const Status& status);
  // A follower's half: sends its part to rank 0 as `type` and reads `count` result values into `out`.
  void send_and_await_result(FrameType type, std::vector<uint8_t> payload, const char* what, uint64_t count,
                             float* out);
  // Rank 0's last step: every follower gets the `count` values of `out`.
  void send_result(const float* out, uint64_t count);
  Control& control_;
};

}  // namespace dsv41::dist
