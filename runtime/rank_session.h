// runtime/rank_session.h — what a world of ranks-as-threads needs from one rank's session, on either backend.
//
// Generation and serving drive a world through this interface only (they know nothing of kernels):
// a Backend makes each rank's session on that rank's own thread (a CUDA context is per thread), and
// every rank then runs the same phases in the same order, so the collectives inside them pair up.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/program_file.h"
#include "common/status.h"

namespace dsv41 {

class RankSession {
 public:
  virtual ~RankSession() = default;
  virtual int rank() const = 0;
  virtual const std::vector<Phase>& phases() const = 0;
  virtual const Phase* find_phase(const std::string& name) const = 0;
  // Runs every call of `phase` over `statics`, int32 [phase.rows, kStaticsFields] (common/call_list.h).
  virtual Status run(const Phase& phase, const std::vector<int32_t>& statics) = 0;
  // Copies rows [first_row, first_row + rows) of the phase's "logits" buffer (F32 [phase.rows, vocab],
  // valid after run) to `out`, which holds rows * vocab floats.
  virtual Status read_logits(const Phase& phase, int64_t first_row, int64_t rows, float* out) = 0;
  // Zeroes a slot's state (a new sequence).
  virtual void reset_slot(int slot) = 0;
};

// Makes the sessions of one world whose ranks are threads of this process, and the exchange they
// share. create() is called once per rank, each on that rank's own thread, concurrently.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Result<std::unique_ptr<RankSession>> create(const ProgramFile& program) = 0;
  // Wakes every rank blocked in a collective (they fail with `reason`); the first reason is kept.
  virtual void abort(const std::string& reason) = 0;
};

// Makes the backend of a world of `world` ranks; generation and serving take one (empty: the CPU backend).
using BackendFactory = std::function<Result<std::unique_ptr<Backend>>(int world)>;

}  // namespace dsv41
