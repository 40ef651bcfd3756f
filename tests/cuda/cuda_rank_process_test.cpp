// tests/cuda/cuda_rank_process_test.cpp — world 2 as two dsv41-rt processes, one GPU each, exchanging over NCCL inside the graphs (label gpu; skips without 2 GPUs or NCCL).
//
// Both pack formats in check mode (activations f32): rank 0's tokens equal the CPU backend's and its
// logits are within 1e-3·max|logit| of them at every step; both ranks print the same logits digest
// after every phase; graph replay equals --eager bit for bit (and --eager --time-exchanges prints
// each rank's NCCL exchange time). Then fail-fast: SIGKILL of one rank mid-decode ends the other
// within 2 s with exit code 3, naming the killed rank.
#include <signal.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <regex>
#include <thread>

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "runtime/dist/control.h"
#include "runtime/dist/socket.h"
#include "runtime/generate.h"
#include "runtime/gpu/nccl_library.h"
#include "tests/cuda/cuda_test_device.h"
#include "tests/dist/rank_process_runner.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::cuda_test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::vector<std::string> generate_args(const fs::path& programs, const fs::path& pack, int max_tokens) {
  return {"generate", programs.string(), "--model", pack.string(), "--prompt-ids", fmt::format("{}", fmt::join(prompt(), ",")),
          "--max-tokens", std::to_string(max_tokens), "--ignore-eos", "--backend", "cuda"};
}

std::vector<float> read_floats(const fs::path& path) {
  const std::string bytes = test::read_file(path);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// "dsv41-rt: rank R: step K PHASE logits digest D" lines of rank R, in order.
std::vector<std::string> digests(const std::string& err, int rank) {
  std::vector<std::string> out;
  const std::regex line(fmt::format("dsv41-rt: rank {}: step ([0-9]+ [^ ]+) logits digest ([0-9a-f]+)", rank));
  for (auto it = std::sregex_iterator(err.begin(), err.end(), line); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str() + " " + (*it)[2].str());
  return out;
}

class CudaRankProcesses : public DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    auto count = device_.driver->device_count();
    if (!count.is_ok() || *count < 2) GTEST_SKIP() << "world 2 as processes needs 2 GPUs (one per rank: NCCL refuses "
                                                     "two ranks on one device)";
    auto nccl = gpu::NcclLibrary::open();
    if (!nccl.is_ok()) GTEST_SKIP() << nccl.status().message();
  }
};

TEST_F(CudaRankProcesses, WorldTwoMatchesTheCpuRanksAgreeAndGraphsEqualEager) {
  test::TempDir dir("nccl_w2");
  for (const std::string format : {"release", "bf16"}) {
    SCOPED_TRACE("pack " + format);
    const fs::path& pack = test::tiny_pack(format);
    const fs::path programs = dir / format;
    plan_world(pack, 2, DType::F32, programs);
    auto cpu = generate(options_for(programs, pack));
    ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();

    std::vector<float> logits[2];
    for (const bool eager : {false, true}) {
      std::vector<std::string> args = {"launch", "--gpus", "0,1"};
      for (const std::string& a : generate_args(programs, pack, kDecoded)) args.push_back(a);
      const fs::path out = dir / fmt::format("{}-{}.f32", format, eager ? "eager" : "graphs");
      for (std::string a : {std::string("--logits-out"), out.string(), std::string("--logits-digests")}) args.push_back(a);
      if (eager) args.insert(args.end(), {"--eager", "--time-exchanges"});
      const auto started = Clock::now();
      const test::CommandResult run = test::run_dsv41rt(args);
      EXPECT_EQ(run.exit_code, 0) << run.describe();
      EXPECT_EQ(run.out, fmt::format("{}\n", fmt::join(cpu->tokens, " "))) << "rank 0's tokens are the CPU's";
      const auto d0 = digests(run.err, 0), d1 = digests(run.err, 1);
      EXPECT_EQ(d0.size(), 3u + kDecoded - 1) << run.err;  // 3 prefill segments of 16, then 31 decode steps
      EXPECT_EQ(d0, d1) << "ranks hold different logits bits";
      logits[eager] = read_floats(out);
      std::printf("pack %s, %s: %.2f s for launch + boot + %d tokens; %zu phases with equal digests on both ranks\n",
                  format.c_str(), eager ? "eager" : "graphs", std::chrono::duration<double>(Clock::now() - started).count(),
                  kDecoded, d0.size());
      if (!eager) {
        const std::regex built("rank [01]: [0-9]+ graphs for [^\n]*");
        for (auto it = std::sregex_iterator(run.err.begin(), run.err.end(), built); it != std::sregex_iterator(); ++it)
          std::printf("  %s\n", it->str().c_str());
      }
      if (eager) {
        const std::regex timing("dsv41-rt: rank [01]: [^\n]*NCCL exchanges took[^\n]*");
        for (auto it = std::sregex_iterator(run.err.begin(), run.err.end(), timing); it != std::sregex_iterator(); ++it)
          std::printf("  %s\n", it->str().c_str());
      }
    }
    const size_t vocab = cpu->logits[0].size();
    ASSERT_EQ(logits[0].size(), cpu->logits.size() * vocab);
    double worst = 0;
    for (size_t step = 0; step < cpu->logits.size(); ++step) {
      const std::vector<float>& c = cpu->logits[step];
      const float scale = max_abs(c);
      for (size_t v = 0; v < vocab; ++v) {
        const float g = logits[0][step * vocab + v];
        worst = std::max(worst, static_cast<double>(std::fabs(g - c[v]) / scale));
        ASSERT_LE(std::fabs(g - c[v]), 1e-3f * scale) << "step " << step << " id " << v << ": cuda " << g << ", cpu " << c[v];
      }
    }
    EXPECT_EQ(0, std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)))
        << "graph replay and --eager differ";
    std::printf("pack %s world 2 as processes f32: tokens identical to the CPU, worst |cuda-cpu|/max|cpu| %.2e, "
                "graphs == eager\n", format.c_str(), worst);
  }
}

// SIGKILL of `victim` while rank 0 decodes (pausing 100 ms per step): the other exits within 2 s with
// code 3, naming the victim.
void kill_mid_decode(int victim) {
  test::TempDir dir("nccl_kill");
  const fs::path& pack = test::tiny_pack("release");
  plan_world(pack, 2, DType::BF16, dir / "w2");
  auto port = dist::pick_free_port();
  ASSERT_TRUE(port.is_ok()) << port.status().message();
  std::vector<test::RankProcess> ranks(2);
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> args = generate_args(dir / "w2", pack, 60);
    args.insert(args.end(), {"--step-pause-ms", "100"});
    ranks[r].start(test::rank_args(args, r, 2, port.value()), dir / fmt::format("rank{}.err", r), std::to_string(r));
  }
  const auto started = Clock::now();
  while (ranks[0].stderr_text().find("decode step 3\n") == std::string::npos) {
    ASSERT_LT(Clock::now() - started, std::chrono::seconds(60)) << "rank 0 never reached decode step 3:\n"
                                                                << ranks[0].stderr_text() << ranks[1].stderr_text();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (test::RankProcess& r : ranks) ASSERT_EQ(waitpid(r.pid, &r.status, WNOHANG), 0) << "a rank ended before the kill";
  kill(ranks[victim].pid, SIGKILL);
  const auto killed_at = Clock::now();
  ASSERT_TRUE(ranks[victim].wait(2000));
  const int other = 1 - victim;
  ASSERT_TRUE(ranks[other].wait(2000)) << "still running 2 s after rank " << victim << " was killed";
  const double seconds = std::chrono::duration<double>(ranks[other].ended - killed_at).count();
  EXPECT_LT(seconds, 2.0);
  const std::string err = ranks[other].stderr_text();
  EXPECT_EQ(ranks[other].exit_code(), dist::kExitRankFailed) << err;
  EXPECT_NE(err.find(fmt::format("dsv41-rt: rank {}: stopped: another rank failed: rank {} (", other, victim)),
            std::string::npos) << err;
  const size_t last = err.rfind("dsv41-rt: rank");
  std::printf("killed rank %d: rank %d exited with %d after %.3f s: %s", victim, other, ranks[other].exit_code(), seconds,
              err.substr(last == std::string::npos ? 0 : last).c_str());
}

using CudaRankProcessesOneGpu = DeviceTest;

// NCCL takes one rank per device: two rank processes on GPU 0 get the id over the control connection,
// then both fail in ncclCommInitRank, and the world ends with NCCL's reason (not a hang). Needs one GPU.
TEST_F(CudaRankProcessesOneGpu, TwoRanksOnOneGpuEndWithNcclsReason) {
  auto nccl = gpu::NcclLibrary::open();
  if (!nccl.is_ok()) GTEST_SKIP() << nccl.status().message();
  test::TempDir dir("nccl_one_gpu");
  const fs::path& pack = test::tiny_pack("release");
  plan_world(pack, 2, DType::F32, dir / "w2");
  std::vector<std::string> args = {"launch", "--gpus", "0,0"};
  for (const std::string& a : generate_args(dir / "w2", pack, 4)) args.push_back(a);
  const auto started = Clock::now();
  const test::CommandResult run = test::run_dsv41rt(args);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  EXPECT_NE(run.exit_code, 0) << run.describe();
  EXPECT_NE(run.err.find("ncclCommInitRank(rank "), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find("dsv41-rt launch: first failure: rank "), std::string::npos) << run.describe();
  EXPECT_LT(seconds, 30.0);
  const size_t first = run.err.find("dsv41-rt launch: first failure");
  std::printf("two ranks on one GPU: exit %d after %.2f s; %s", run.exit_code, seconds,
              run.err.substr(first == std::string::npos ? 0 : first).c_str());
}

TEST_F(CudaRankProcesses, KillingRankOneMidDecodeEndsRankZeroWithinTwoSeconds) { kill_mid_decode(1); }
TEST_F(CudaRankProcesses, KillingRankZeroMidDecodeEndsRankOneWithinTwoSeconds) { kill_mid_decode(0); }

}  // namespace
}  // namespace dsv41::cuda_test
