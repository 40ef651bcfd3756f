// tests/cuda/cuda_release_boot_test.cpp — a release share boots on one GPU with synthetic weights and its
// printed ledger is compared with the device memory it really takes (label gpu). Needs a planned
// release program: DSV41_RELEASE_PROGRAM=PATH/rank0.fb (`dsv41c plan RELEASE_PACK --world 4 --rank 0
// --target h200`, headers-only pack); skips without it or without a device. The other ranks are absent,
// so the exchanges take their partials as zeros (SoloExchange): the numbers mean nothing, the memory
// and the launches are real. DSV41_RELEASE_REPLAY=name,name replays those phases once each.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <sstream>

#include <gtest/gtest.h>

#include "common/program_file.h"
#include "runtime/gpu/gpu_session.h"
#include "tests/cuda/cuda_test_device.h"

namespace dsv41::cuda_test {
namespace {

// One rank alone: its own partial is the sum, and the gathered columns of the others are zeros.
class SoloExchange final : public gpu::DeviceExchange {
 public:
  explicit SoloExchange(gpu::CudaDriver& driver) : d_(driver) {}
  bool host_side() const override { return true; }
  Status sum(int, CUdeviceptr, int64_t, CUstream stream) override {
    return d_.check(d_.cuStreamSynchronize(stream), "cuStreamSynchronize(solo sum)");
  }
  Status gather(int rank, CUdeviceptr x, int64_t rows, const std::vector<int64_t>& widths, CUdeviceptr out,
                CUstream stream) override {
    const int64_t total = std::accumulate(widths.begin(), widths.end(), int64_t{0});
    const int64_t before = std::accumulate(widths.begin(), widths.begin() + rank, int64_t{0}), w = widths[rank];
    std::vector<float> local(static_cast<size_t>(rows * w)), all(static_cast<size_t>(rows * total), 0.0f);
    DSV41_TRY(d_.check(d_.cuMemcpyDtoHAsync(local.data(), x, local.size() * 4, stream), "solo gather in"));
    DSV41_TRY(d_.check(d_.cuStreamSynchronize(stream), "solo gather sync"));
    for (int64_t r = 0; r < rows; ++r)
      std::copy(local.begin() + r * w, local.begin() + (r + 1) * w, all.begin() + r * total + before);
    DSV41_TRY(d_.check(d_.cuMemcpyHtoDAsync(out, all.data(), all.size() * 4, stream), "solo gather out"));
    return d_.check(d_.cuStreamSynchronize(stream), "solo gather sync");
  }
  void abort(const std::string&) override {}

 private:
  gpu::CudaDriver& d_;
};

double gib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

using CudaReleaseBoot = DeviceTest;

TEST_F(CudaReleaseBoot, SyntheticShareBootsAndItsLedgerIsWithinTwoPercentOfTheDevice) {
  const char* path = std::getenv("DSV41_RELEASE_PROGRAM");
  if (!path || !*path) GTEST_SKIP() << "DSV41_RELEASE_PROGRAM is not set";
  auto program = ProgramFile::load(path);
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  SoloExchange exchange(*device_.driver);
  gpu::GpuSessionOptions options;
  options.synthetic_seed = 1;
  options.load.threads = 16;
  options.load.progress = stdout;
  auto session = gpu::GpuSession::create(*program, options, *device_.driver, exchange);
  ASSERT_TRUE(session.is_ok()) << session.status().message();
  std::printf("%s\n", (*session)->boot_report().c_str());
  const auto& m = (*session)->boot_measure();
  const uint64_t ledger = program->program().ledger()->total();
  const uint64_t measured = m.free_before - m.free_after_graphs;
  const double off = std::fabs(static_cast<double>(measured) - static_cast<double>(ledger)) / static_cast<double>(ledger);
  std::printf("ledger total %.3f GiB, measured %.3f GiB (free before boot − free after graphs), %.2f%% apart; "
              "%zu graphs in %.2f s\n", gib(ledger), gib(measured), 100 * off, m.graphs, m.graph_seconds);
  std::fflush(stdout);  // a replay that runs past the caller's timeout must not take these lines with it
  EXPECT_LE(off, 0.02);

  const char* replay = std::getenv("DSV41_RELEASE_REPLAY");
  std::stringstream names(replay ? replay : "");
  for (std::string name; std::getline(names, name, ',');) {
    const Phase* phase = (*session)->find_phase(name);
    ASSERT_NE(phase, nullptr) << name;
    std::vector<int32_t> statics(static_cast<size_t>(phase->rows) * kStaticsFields);
    for (int64_t r = 0; r < phase->rows; ++r) {
      statics[r * kStaticsFields + kStaticToken] = static_cast<int32_t>(5 + r);
      statics[r * kStaticsFields + kStaticPosition] = static_cast<int32_t>(r);
    }
    const auto start = std::chrono::steady_clock::now();
    const Status run = (*session)->run(*phase, statics);
    EXPECT_TRUE(run.is_ok()) << run.message();
    std::printf("replayed %s (%lld rows) in %.3f s: %s\n", name.c_str(), static_cast<long long>(phase->rows),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                run.is_ok() ? "ok" : run.message().c_str());
    std::fflush(stdout);
    (*session)->reset_slot(0);
  }
}

}  // namespace
}  // namespace dsv41::cuda_test
