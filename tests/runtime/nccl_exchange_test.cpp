// tests/runtime/nccl_exchange_test.cpp — the NCCL exchange's bookkeeping without a GPU: a fake NCCL (ranks as threads, "device" pointers that are host memory) under the real NcclComm and NcclExchange.
#include "runtime/gpu/nccl_exchange.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "runtime/exchange.h"

namespace dsv41::gpu {
namespace {

// The fake's world: every collective is a rendezvous of all ranks (each posts its send buffer), a copy
// by every rank, and a second rendezvous so no rank's buffer goes while another still reads it.
struct FakeNccl {
  std::mutex mutex;
  std::condition_variable wake;
  int world = 0, arrived = 0, generation = 0;
  std::vector<const float*> posted;
  std::vector<int> init_ranks;
  std::vector<std::vector<uint8_t>> init_ids;
  std::atomic<int> async_error{nccl::Success}, aborts{0}, broadcasts{0}, all_gathers{0};

  void barrier() {
    std::unique_lock lock(mutex);
    const int g = generation;
    if (++arrived == world) {
      arrived = 0;
      ++generation;
      wake.notify_all();
    } else {
      wake.wait(lock, [&] { return generation != g; });
    }
  }
};
FakeNccl* fake = nullptr;
thread_local int group_depth = 0;  // NCCL's groups are per thread

int rank_of(nccl::Comm comm) { return static_cast<int>(reinterpret_cast<uintptr_t>(comm)) - 1; }

int fake_unique_id(nccl::UniqueId* id) {
  for (size_t i = 0; i < sizeof id->internal; ++i) id->internal[i] = static_cast<char>(i * 7 + 3);
  return nccl::Success;
}
int fake_init(nccl::Comm* comm, int world, nccl::UniqueId id, int rank) {
  {
    std::lock_guard lock(fake->mutex);
    if (world != fake->world) return nccl::InvalidArgument;
    fake->init_ranks.push_back(rank);
    fake->init_ids.emplace_back(reinterpret_cast<uint8_t*>(id.internal), reinterpret_cast<uint8_t*>(id.internal) + 128);
  }
  *comm = reinterpret_cast<nccl::Comm>(static_cast<uintptr_t>(rank + 1));
  return nccl::Success;
}
int fake_all_gather(const void* send, void* recv, size_t count, int type, nccl::Comm comm, CUstream) {
  if (type != nccl::Float32) return nccl::InvalidArgument;
  ++fake->all_gathers;
  fake->posted[rank_of(comm)] = static_cast<const float*>(send);
  fake->barrier();
  for (int r = 0; r < fake->world; ++r) std::memcpy(static_cast<float*>(recv) + r * count, fake->posted[r], count * 4);
  fake->barrier();
  return nccl::Success;
}
int fake_broadcast(const void* send, void* recv, size_t count, int type, int root, nccl::Comm comm, CUstream) {
  if (type != nccl::Float32 || group_depth != 1) return nccl::InvalidUsage;  // the exchange groups them
  ++fake->broadcasts;
  fake->posted[rank_of(comm)] = static_cast<const float*>(send);
  fake->barrier();
  std::memcpy(recv, fake->posted[root], count * 4);
  fake->barrier();
  return nccl::Success;
}
int fake_group_start() { return ++group_depth, nccl::Success; }
int fake_group_end() { return --group_depth, nccl::Success; }
int fake_async_error(nccl::Comm, int* error) { return *error = fake->async_error.load(), nccl::Success; }
int fake_abort(nccl::Comm) { return ++fake->aborts, nccl::Success; }
const char* fake_error_string(int) { return "a fake NCCL's error"; }

class NcclFake : public ::testing::Test {
 protected:
  void start(int world) {
    state_.world = world;
    state_.posted.assign(world, nullptr);
    fake = &state_;
    lib_ = NcclLibrary::unloaded();
    lib_->ncclGetUniqueId = fake_unique_id;
    lib_->ncclCommInitRank = fake_init;
    lib_->ncclAllGather = fake_all_gather;
    lib_->ncclBroadcast = fake_broadcast;
    lib_->ncclGroupStart = fake_group_start;
    lib_->ncclGroupEnd = fake_group_end;
    lib_->ncclCommGetAsyncError = fake_async_error;
    lib_->ncclCommAbort = fake_abort;
    lib_->ncclGetErrorString = fake_error_string;
  }
  void TearDown() override { fake = nullptr; }

  // The sum kernel's arithmetic on host memory: rank 0's value, then each rank's added in turn.
  static NcclExchange::SumKernel host_sum() {
    return [](CUdeviceptr gathered, CUdeviceptr out, int64_t n, int world, CUstream) {
      const float* g = reinterpret_cast<const float*>(gathered);
      float* o = reinterpret_cast<float*>(out);
      for (int64_t i = 0; i < n; ++i) {
        float total = g[i];
        for (int r = 1; r < world; ++r) total += g[r * n + i];
        o[i] = total;
      }
      return Status::ok();
    };
  }

  // Every rank of `world` on its own thread: join the communicator, then `body(rank, exchange)`.
  void run_world(int world, const std::function<void(int, NcclExchange&)>& body) {
    nccl::UniqueId id{};
    ASSERT_TRUE(lib_->check(lib_->ncclGetUniqueId(&id), "ncclGetUniqueId").is_ok());
    std::vector<std::thread> ranks;
    for (int r = 0; r < world; ++r)
      ranks.emplace_back([&, r] {
        auto comm = NcclComm::init(*lib_, id, r, world);
        ASSERT_TRUE(comm.is_ok()) << comm.status().message();
        NcclExchange exchange(**comm, host_sum());
        body(r, exchange);
      });
    for (auto& t : ranks) t.join();
  }

  FakeNccl state_;
  std::unique_ptr<NcclLibrary> lib_;
};

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

CUdeviceptr ptr(const float* p) { return reinterpret_cast<CUdeviceptr>(p); }

TEST_F(NcclFake, EveryRankJoinsWithRankZerosIdAndEachCommIsAbortedOnce) {
  start(3);
  run_world(3, [](int, NcclExchange&) {});
  ASSERT_EQ(state_.init_ids.size(), 3u);
  for (const auto& id : state_.init_ids) EXPECT_EQ(id, state_.init_ids[0]);
  std::vector<int> ranks = state_.init_ranks;
  std::sort(ranks.begin(), ranks.end());
  EXPECT_EQ(ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(state_.aborts.load(), 3);  // each communicator's destructor aborts it, once
}

// The sum's bits equal the CPU exchange's rank-ordered sum, on every rank.
TEST_F(NcclFake, SumGivesTheInProcessBitsOnEveryRank) {
  const int world = 3;
  const int64_t n = 1000;
  start(world);
  std::vector<std::vector<float>> x(world), staging(world, std::vector<float>(world * n)), expected(world, std::vector<float>(n));
  for (int r = 0; r < world; ++r) x[r] = random_values(n, 100 + r);
  InProcessExchange reference(world);
  std::vector<std::thread> cpu;
  for (int r = 0; r < world; ++r) cpu.emplace_back([&, r] { reference.sum(r, x[r].data(), n, expected[r].data()); });
  for (auto& t : cpu) t.join();
  run_world(world, [&](int r, NcclExchange& exchange) {
    const Status s = exchange.enqueue_sum(r, ptr(x[r].data()), n, ptr(staging[r].data()), nullptr);
    ASSERT_TRUE(s.is_ok()) << s.message();
  });
  for (int r = 0; r < world; ++r)
    EXPECT_EQ(std::memcmp(x[r].data(), expected[0].data(), n * 4), 0) << "rank " << r << " differs from the CPU sum";
  EXPECT_EQ(state_.all_gathers.load(), world);
}

// Uneven widths: one grouped broadcast per rank places each block rank-major; the exchange_gather
// kernel's permutation of that staging gives the CPU exchange's gather.
TEST_F(NcclFake, GatherPlacesUnevenBlocksWhereTheGatherKernelReadsThem) {
  const int world = 3;
  const int64_t rows = 4;
  const std::vector<int64_t> widths = {5, 3, 0};
  const int64_t total = 8;
  start(world);
  std::vector<std::vector<float>> x(world), staging(world, std::vector<float>(rows * total)),
      expected(world, std::vector<float>(rows * total));
  for (int r = 0; r < world; ++r) x[r] = random_values(rows * widths[r], 200 + r);
  InProcessExchange reference(world);
  std::vector<std::thread> cpu;
  for (int r = 0; r < world; ++r)
    cpu.emplace_back([&, r] { reference.gather(r, x[r].data(), rows, widths, expected[r].data()); });
  for (auto& t : cpu) t.join();
  run_world(world, [&](int r, NcclExchange& exchange) {
    const Status s = exchange.enqueue_gather(r, ptr(x[r].data()), rows, widths, ptr(staging[r].data()), nullptr);
    ASSERT_TRUE(s.is_ok()) << s.message();
    EXPECT_EQ(group_depth, 0) << "every ncclGroupStart is matched";
  });
  EXPECT_EQ(state_.broadcasts.load(), world * 2) << "a rank of width 0 sends nothing";
  for (int r = 0; r < world; ++r) {
    // kernels/exchange_gather.cuh: out[row, off_k + c] = x[rows·off_k + row·widths[k] + c].
    std::vector<float> out(rows * total);
    int64_t off = 0;
    for (int k = 0; k < world; off += widths[k], ++k)
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t c = 0; c < widths[k]; ++c) out[row * total + off + c] = staging[r][rows * off + row * widths[k] + c];
    EXPECT_EQ(out, expected[0]) << "rank " << r;
  }
}

TEST_F(NcclFake, GatherBlocksAreRankMajorAndPacked) {
  const auto blocks = gather_blocks(3, {4, 0, 2});
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].offset, 0u);
  EXPECT_EQ(blocks[0].count, 12u);
  EXPECT_EQ(blocks[1].offset, 12u);
  EXPECT_EQ(blocks[1].count, 0u);
  EXPECT_EQ(blocks[2].root, 2);
  EXPECT_EQ(blocks[2].offset, 12u);
  EXPECT_EQ(blocks[2].count, 6u);
}

TEST_F(NcclFake, ARankMismatchOrBadWidthsAreRefusedNamingTheValues) {
  start(2);
  run_world(2, [&](int r, NcclExchange& exchange) {
    float x[4] = {}, staging[8] = {};
    const Status wrong_rank = exchange.enqueue_sum(1 - r, ptr(x), 4, ptr(staging), nullptr);
    EXPECT_EQ(wrong_rank.message(), fmt::format("NCCL exchange sum: called for rank {}, but this process's communicator "
                                                "is rank {} of 2", 1 - r, r));
    const Status widths = exchange.enqueue_gather(r, ptr(x), 1, {1, 2, 3}, ptr(staging), nullptr);
    EXPECT_EQ(widths.message(), "NCCL exchange gather: widths [1, 2, 3] for a world of 2");
  });
}

// The watch reports NCCL's asynchronous error once, naming it; abort is idempotent.
TEST_F(NcclFake, TheWatchReportsAnAsyncErrorAndAbortHappensOnce) {
  start(2);
  nccl::UniqueId id{};
  std::promise<std::string> reported;
  std::atomic<int> reports{0};
  std::vector<std::thread> ranks;
  std::unique_ptr<NcclComm> comms[2];
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      auto comm = NcclComm::init(*lib_, id, r, 2);
      ASSERT_TRUE(comm.is_ok()) << comm.status().message();
      comms[r] = std::move(comm).value();
    });
  for (auto& t : ranks) t.join();
  comms[0]->watch(10, [&](const std::string& reason) {
    if (reports++ == 0) reported.set_value(reason);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(reports.load(), 0) << "no error yet";
  const auto set = std::chrono::steady_clock::now();
  state_.async_error = nccl::RemoteError;
  auto reason = reported.get_future();
  ASSERT_EQ(reason.wait_for(std::chrono::seconds(1)), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - set, std::chrono::milliseconds(500));
  EXPECT_EQ(reason.get(), "NCCL: ncclCommGetAsyncError (an operation failed): ncclRemoteError: a fake NCCL's error");
  comms[1]->abort();
  comms[1]->abort();
  EXPECT_TRUE(comms[1]->aborted());
  EXPECT_EQ(state_.aborts.load(), 1);
  comms[0].reset();
  comms[1].reset();
  EXPECT_EQ(state_.aborts.load(), 2);
  EXPECT_EQ(reports.load(), 1);
}

}  // namespace
}  // namespace dsv41::gpu
