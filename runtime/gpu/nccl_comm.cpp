// runtime/gpu/nccl_comm.cpp — ncclCommInitRank, the asynchronous-error watch, and a bounded abort.
#include "runtime/gpu/nccl_comm.h"

#include <chrono>
#include <cstdlib>
#include <future>

#include <fmt/ranges.h>

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

Result<std::vector<std::unique_ptr<NcclComm>>> NcclComm::init_all(const NcclLibrary& nccl, const std::vector<int>& devices) {
  const int world = static_cast<int>(devices.size());
  if (world < 2) return Status::errorf("NCCL communicators: {} devices (a world of threads on several GPUs has 2 or more)", world);
  std::vector<nccl::Comm> comms(devices.size(), nullptr);
  DSV41_TRY(nccl.check(nccl.ncclCommInitAll(comms.data(), world, devices.data()),
                       fmt::format("ncclCommInitAll({} ranks on devices {})", world, fmt::join(devices, ","))));
  std::vector<std::unique_ptr<NcclComm>> out;
  for (int r = 0; r < world; ++r) out.push_back(std::unique_ptr<NcclComm>(new NcclComm(nccl, comms[r], r, world)));
  return out;
}

void NcclComm::set_environment_defaults() {
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  setenv("NCCL_RUNTIME_CONNECT", "0", 0);
  setenv("NCCL_GRAPH_REGISTER", "0", 0);
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
