// runtime/dist/rank_backend.h — what a rank process needs from a backend: its device's arch for the agreement, and this rank's session once the world has joined.
#pragma once

#include <memory>
#include <string>

#include "common/program_file.h"
#include "common/status.h"
#include "runtime/dist/control.h"
#include "runtime/rank_session.h"

namespace dsv41::dist {

class RankBackend {
 public:
  virtual ~RankBackend() = default;
  // The device this rank runs on ("cpu", "sm_90"): every rank's is compared at start-up.
  virtual std::string arch() const = 0;
  // After the agreement, on the rank's main thread: this rank's session, exchanging with the other
  // rank processes (over `control`, or over what the backend sets up through it). Every rank calls it
  // at the same point, so a set-up that needs every rank (a communicator) pairs up.
  virtual Result<std::unique_ptr<RankSession>> create(const ProgramFile& program, Control& control) = 0;
  // Another rank failed (called once, on a control reader thread, before this rank stops): wake or
  // abort whatever this rank may be waiting on outside the control connection.
  virtual void abort(const std::string& reason) = 0;
  // The rank is done (its session gone) and `control` is about to close: release whatever refers to it.
  virtual void close() {}
};

// The CPU backend between processes: CpuSession over the socket exchange (runtime/dist/socket_exchange.h).
std::unique_ptr<RankBackend> cpu_rank_backend(const std::string& model_dir);

}  // namespace dsv41::dist
