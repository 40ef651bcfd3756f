// runtime/gpu/nccl_comm.cpp — ncclCommInitRank, the asynchronous-error watch, and a bounded abort.
#include "runtime/gpu/nccl_comm.h"

#include <chrono>
#include <future>

namespace dsv41::gpu {

Result<std::unique_ptr<NcclComm>> NcclComm::init(const NcclLibrary& nccl, const nccl::UniqueId& id, int rank,
                                                 int world) {
  if (world < 2 || rank < 0 || rank >= world)
    return Status::errorf("NCCL communicator: rank {} of world {} (a world of processes has 2 ranks or more)", rank, world);
  nccl::Comm comm = nullptr;
  DSV41_TRY(nccl.check(nccl.ncclCommInitRank(&comm, world, id, rank),
                       fmt::format("ncclCommInitRank(rank {} of {})", rank, world)));
  return std::unique_ptr<NcclComm>(new NcclComm(nccl, comm, rank, world));
}

NcclComm::~NcclComm() {
  stop_watch();
  // NCCL's threads must be gone before the process exits and the CUDA runtime inside libnccl tears
  // down (a rank segfaulted at exit after a clean run while this abort was bounded to 500 ms).
  abort(kDestroyWaitMs);
}

void NcclComm::stop_watch() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

void NcclComm::watch(int poll_ms, std::function<void(const std::string& reason)> on_error) {
  watcher_ = std::thread([this, poll_ms, on_error = std::move(on_error)] {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(poll_ms), [&] { return stopping_; })) {
      if (aborted_) return;
      int async = nccl::Success;
      Status s = nccl_.check(nccl_.ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
      if (s.is_ok() && async != nccl::Success && async != nccl::InProgress)
        s = nccl_.check(async, "ncclCommGetAsyncError (an operation failed)");
      if (!s.is_ok()) {
        lock.unlock();
        on_error("NCCL: " + s.message());
        return;
      }
    }
  });
}

void NcclComm::abort(int limit_ms) {
  std::shared_future<void> done;
  {
    // Under the watch's lock: the watch never queries a communicator being aborted.
    std::lock_guard lock(mutex_);
    if (!aborted_.exchange(true) && comm_) {
      // On a thread of its own: a rank that must end within the fail-fast bound waits at most
      // `limit_ms`; later callers (the destructor) wait for the same abort to finish.
      auto promise = std::make_shared<std::promise<void>>();
      abort_done_ = promise->get_future().share();
      std::thread([nccl = &nccl_, comm = comm_, promise] {
        (void)nccl->ncclCommAbort(comm);
        promise->set_value();
      }).detach();
    }
    done = abort_done_;
  }
  if (done.valid()) (void)done.wait_for(std::chrono::milliseconds(limit_ms));
}

}  // namespace dsv41::gpu
