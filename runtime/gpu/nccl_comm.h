// runtime/gpu/nccl_comm.h — one NCCL communicator of a world of rank processes: made from rank 0's unique id, watched for asynchronous errors, aborted on a failure.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "runtime/gpu/nccl_library.h"

namespace dsv41::gpu {

class NcclComm {
 public:
  // ncclCommInitRank on the calling thread, whose current context is this rank's device; it returns
  // once every rank of the world has joined with the same id.
  static Result<std::unique_ptr<NcclComm>> init(const NcclLibrary& nccl, const nccl::UniqueId& id, int rank, int world);
  // Ranks that are threads of one process, one GPU each: ncclCommInitAll from one thread, rank r on
  // devices[r] (NCCL refuses two ranks on one device).
  static Result<std::vector<std::unique_ptr<NcclComm>>> init_all(const NcclLibrary& nccl, const std::vector<int>& devices);
  // NCCL's environment as the runtime wants it, unless the user set it: NVLink SHARP (multicast) off,
  // every connection made at init (not during the first captured collective), captured collectives
  // not registering the session's buffers (the session frees them before the communicator goes).
  static void set_environment_defaults();
  // Stops the watch, then ncclCommAbort: local and immediate, where ncclCommDestroy may wait on peers
  // that have already gone (a rank process ends right after).
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  nccl::Comm get() const { return comm_; }
  const NcclLibrary& library() const { return nccl_; }
  int rank() const { return rank_; }
  int world() const { return world_; }

  // Polls ncclCommGetAsyncError every `poll_ms` on a thread of its own; the first error (or a failed
  // query) calls `on_error` once, on that thread, with "NCCL: <call>: <name>: <text>".
  void watch(int poll_ms, std::function<void(const std::string& reason)> on_error);
  // ncclCommAbort, once: wakes this rank's NCCL kernels and host waits. Waits at most `limit_ms` for
  // it (a later call waits for the same abort); an abort that takes longer goes on on its own thread.
  void abort(int limit_ms = 500);
  bool aborted() const { return aborted_.load(); }

 private:
  NcclComm(const NcclLibrary& nccl, nccl::Comm comm, int rank, int world)
      : nccl_(nccl), comm_(comm), rank_(rank), world_(world) {}
  void stop_watch();

  const NcclLibrary& nccl_;
  nccl::Comm comm_;
  int rank_, world_;
  static constexpr int kDestroyWaitMs = 10000;
  std::atomic<bool> aborted_{false};
  std::shared_future<void> abort_done_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace dsv41::gpu
