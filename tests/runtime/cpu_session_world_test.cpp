// tests/runtime/cpu_session_world_test.cpp — sessions of one world exchanging through threads, and the refusals of create().
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "compiler/program/rank_planner.h"
#include "compiler/synth/synth_pack.h"
#include "compiler/plan/targets.h"
#include "runtime/cpu/cpu_session.h"
#include "runtime/exchange.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41 {
namespace {

using cpu::CpuSession;

// A phase of two rows: optionally an op that fails, then a rank-ordered sum of x [2, 8] into y.
CallLists sum_phase(bool fail_first) {
  Call sum;
  sum.op = "exchange_sum";
  sum.constants = {{"width", 8}};
  sum.args = {{"x", ArgKind::Scratch, {0}, 0.0}, {"out", ArgKind::Scratch, {1}, 0.0}};
  Phase phase;
  phase.name = "sum.r2";
  phase.rows = 2;
  phase.buffers = {{"x", DType::F32, {2, 8}, 0, 64}, {"y", DType::F32, {2, 8}, 256, 64}};
  phase.arena_bytes = 512;
  if (fail_first) phase.calls.push_back(Call{"no_such_op", {}, {}, {}});
  phase.calls.push_back(sum);
  CallLists calls;
  calls.phases.push_back(phase);
  return calls;
}

const std::vector<int32_t> kTwoRows = {5, 0, 0, 0, 6, 0, 1, 0};

TEST(CpuSessionWorld, TwoRanksSumTheirPartialsInRankOrder) {
  std::vector<ProgramFile> programs = test::plan_programs(test::tiny_pack("bf16"), 2, test::small_settings());
  ASSERT_EQ(programs.size(), 2u);
  InProcessExchange exchange(2);
  std::vector<std::vector<float>> y(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank)
    threads.emplace_back([&, rank] {
      auto session = CpuSession::create(programs[rank], sum_phase(false), test::tiny_pack("bf16").string(), exchange);
      if (!session.is_ok()) {
        errors[rank] = session.status().message();
        exchange.abort(errors[rank]);
        return;
      }
      const Phase& phase = (*session)->phases()[0];
      cpu::TensorView x = *(*session)->output(phase, "x");
      for (int64_t i = 0; i < 16; ++i) x.set(i, 0.1f * static_cast<float>(i) + 100.0f * static_cast<float>(rank));
      const Status status = (*session)->run(phase, kTwoRows);
      if (!status.is_ok()) errors[rank] = status.message();
      const cpu::TensorView out = *(*session)->output(phase, "y");
      for (int64_t i = 0; i < 16; ++i) y[rank].push_back(out.get(i));
    });
  for (auto& t : threads) t.join();
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  for (int64_t i = 0; i < 16; ++i) {
    const float want = 0.1f * static_cast<float>(i) + (0.1f * static_cast<float>(i) + 100.0f);
    EXPECT_EQ(y[0][i], want) << i;
    EXPECT_EQ(std::memcmp(&y[0][i], &y[1][i], 4), 0) << "ranks differ at " << i;
  }
}

TEST(CpuSessionWorld, AFailingRankEndsTheOtherWithItsMessage) {
  std::vector<ProgramFile> programs = test::plan_programs(test::tiny_pack("bf16"), 2, test::small_settings());
  ASSERT_EQ(programs.size(), 2u);
  InProcessExchange exchange(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank)
    threads.emplace_back([&, rank] {
      auto session = CpuSession::create(programs[rank], sum_phase(rank == 1), test::tiny_pack("bf16").string(), exchange);
      ASSERT_TRUE(session.is_ok()) << session.status().message();
      const Status status = (*session)->run((*session)->phases()[0], kTwoRows);
      if (!status.is_ok()) {
        errors[rank] = status.message();
        exchange.abort("rank " + std::to_string(rank) + ": " + status.message());
      }
    });
  for (auto& t : threads) t.join();  // rank 0 would wait forever in the sum without the abort
  EXPECT_EQ(errors[1], "phase sum.r2 call #0 (no_such_op): the CPU backend has no implementation of op no_such_op");
  EXPECT_EQ(errors[0], "phase sum.r2 call #0 (exchange_sum): exchange aborted: rank 1: " + errors[1]);
}

TEST(CpuSessionRefusals, APackOfAnotherDigest) {
  std::vector<ProgramFile> programs = test::plan_programs(test::tiny_pack("release"), 1, test::small_settings());
  ASSERT_EQ(programs.size(), 1u);
  InProcessExchange exchange(1);
  const std::string other = test::tiny_pack("bf16").string();
  auto session = CpuSession::create(programs[0], other, exchange);
  ASSERT_FALSE(session.is_ok());
  const std::string message = session.status().message();
  EXPECT_NE(message.find(other + ": pack digest "), std::string::npos) << message;
  EXPECT_NE(message.find(fmt::format("{:016x}", programs[0].program().pack_digest())), std::string::npos) << message;
  EXPECT_NE(message.find("differs from the program's pack_digest"), std::string::npos) << message;
}

TEST(CpuSessionRefusals, ATruncatedShard) {
  const test::fs::path& pack = test::tiny_pack("release");
  std::vector<ProgramFile> programs = test::plan_programs(pack, 1, test::small_settings());
  ASSERT_EQ(programs.size(), 1u);
  // The same pack, with its last shard one kilobyte short (the rest linked, not copied).
  test::TempDir dir("truncated");
  std::vector<test::fs::path> files;
  for (const auto& entry : test::fs::directory_iterator(pack)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  test::fs::path last_shard;
  for (const auto& f : files)
    if (f.extension() == ".safetensors") last_shard = f;
  for (const auto& f : files) {
    if (f == last_shard) {
      test::fs::copy_file(f, dir / f.filename().string());
      test::fs::resize_file(dir / f.filename().string(), test::fs::file_size(f) - 1024);
    } else {
      test::fs::create_symlink(f, dir / f.filename().string());
    }
  }
  InProcessExchange exchange(1);
  auto session = CpuSession::create(programs[0], dir.path().string(), exchange);
  ASSERT_FALSE(session.is_ok());
  const std::string message = session.status().message();
  EXPECT_NE(message.find(last_shard.filename().string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST(CpuSessionRefusals, ReleaseWithEngramIsRefusedOnlyForItsMissingData) {
  // The release config has Engram layers, which the CPU backend runs (tests/engram): a header-only
  // pack plans, and its session is refused for the shards' missing bytes, not for Engram.
  test::TempDir dir("release");
  SynthPackOptions options;
  options.out_dir = dir.path().string();
  options.format = SynthFormat::Release;
  options.headers_only = true;
  const std::string text = test::read_file(test::fixture_config_path("dsv41-release"));
  ASSERT_TRUE(write_synth_pack(test::fixture_config("dsv41-release"), text, options).is_ok());
  auto inputs = ModelInputs::read(dir.path().string());
  ASSERT_TRUE(inputs.is_ok()) << inputs.status().message();
  PlanOptions plan_options;
  plan_options.world = 8;
  plan_options.settings = test::small_settings();
  plan_options.target = *find_target("none");
  auto plan = plan_rank(*inputs, plan_options, 0);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  auto program = ProgramFile::from_bytes(plan->program, "rank0.fb");
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  InProcessExchange exchange(8);
  auto session = CpuSession::create(*program, dir.path().string(), exchange);
  ASSERT_FALSE(session.is_ok());
  EXPECT_NE(session.status().message().find("(a header-only or truncated shard)"), std::string::npos)
      << session.status().message();
  EXPECT_EQ(session.status().message().find("Engram is not implemented"), std::string::npos) << session.status().message();
}

}  // namespace
}  // namespace dsv41
