// tests/dist/rank_process_e2e.cpp — dsv41-rt ranks as processes: the in-process tokens at worlds 2 and 3, a refused agreement, and fail-fast when a rank is killed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "runtime/dist/control.h"
#include "runtime/dist/socket.h"
#include "runtime/generate.h"
#include "tests/dist/rank_process_runner.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41 {
namespace {

using test::RankProcess;
using test::rank_args;
using Clock = std::chrono::steady_clock;
const std::vector<int32_t> kPrompt = {5, 6, 7, 8, 9, 10, 300, 301, 1000, 17, 4};

std::string prompt_flag() { return fmt::format("{}", fmt::join(kPrompt, ",")); }

std::vector<int32_t> in_process_tokens(const test::fs::path& programs, int max_tokens, int64_t segment_rows) {
  auto result = generate(test::tiny_generate_options(programs, kPrompt, max_tokens, segment_rows));
  EXPECT_TRUE(result.is_ok()) << result.status().message();
  return result.is_ok() ? result->tokens : std::vector<int32_t>{};
}

std::vector<std::string> generate_args(const test::fs::path& programs, int max_tokens, int64_t segment_rows) {
  return {"generate", programs.string(), "--model", test::tiny_pack("release").string(), "--prompt-ids", prompt_flag(),
          "--max-tokens", std::to_string(max_tokens), "--segment-rows", std::to_string(segment_rows), "--ignore-eos"};
}

// Launches `world` rank processes and compares rank 0's output with the in-process generate().
void expect_in_process_tokens(int world, int64_t segment) {
  test::TempDir dir("world");
  const test::fs::path programs = dir / "programs";
  test::write_programs(programs, test::tiny_pack("release"), world, test::small_settings());
  const std::vector<int32_t> want = in_process_tokens(programs, 6, segment);
  std::vector<std::string> args = {"launch", "--world", std::to_string(world)};
  for (const std::string& a : generate_args(programs, 6, segment)) args.push_back(a);
  const test::CommandResult run = test::run_dsv41rt(args);
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.out, fmt::format("{}\n", fmt::join(want, " "))) << "only rank 0 prints, and the same tokens";
}

TEST(RankProcesses, WorldTwoGivesTheInProcessTokens) { expect_in_process_tokens(2, 0); }
// Token by token through decode.r1, and an uneven split (world 3 of the tiny model).
TEST(RankProcesses, WorldThreeGivesTheInProcessTokens) { expect_in_process_tokens(3, 1); }

// Drafted rounds travel as rounds like any other: two rank processes verifying 3 drafts a round give
// the in-process drafted tokens (which tests/draft shows equal serial decoding's). The tiny draft
// model's programs have Draft phases, so the drafts come from its DSpark blocks, whose Draft phase
// runs on every rank as a round of its own (random blocks: few or none are kept).
TEST(RankProcesses, DraftedGenerationGivesTheInProcessTokens) {
  test::TempDir dir("drafted");
  auto settings = test::small_settings();
  settings.decode_rows = {1, 2, 4};
  settings.draft_tokens = 3;
  const test::fs::path& pack = test::fixture_pack("dsv41-tiny-draft", "release");
  test::write_programs(dir / "w2", pack, 2, settings);
  GenerateOptions o;
  o.program_dir = (dir / "w2").string();
  o.model_dir = pack.string();
  o.max_tokens = 16;
  o.stop_at_eos = false;
  o.draft_tokens = 3;
  for (int32_t i = 0; i < 12; ++i) o.prompt.push_back(29 + i % 5);
  auto want = generate(o);
  ASSERT_TRUE(want.is_ok()) << want.status().message();
  ASSERT_GT(want->drafting.drafted, 0) << "every decode round drafts";
  const test::CommandResult run = test::run_dsv41rt(
      {"launch", "--world", "2", "generate", o.program_dir, "--model", o.model_dir, "--prompt-ids",
       fmt::format("{}", fmt::join(o.prompt, ",")), "--max-tokens", "16", "--ignore-eos", "--draft-tokens", "3"});
  ASSERT_EQ(run.exit_code, 0) << run.describe();
  EXPECT_EQ(run.out, fmt::format("{}\n", fmt::join(want->tokens, " ")));
}

// Kills `victim` of a world of 3 mid-decode (rank 0 pauses 100 ms per step and announces it, so the
// kill lands between steps 3 and 40); every other rank must exit within 2 s with the documented
// code, naming the victim.
void kill_one_mid_decode(int victim) {
  test::TempDir dir("kill");
  const test::fs::path programs = dir / "w3";
  test::write_programs(programs, test::tiny_pack("release"), 3, test::small_settings());
  auto port = dist::pick_free_port();
  ASSERT_TRUE(port.is_ok()) << port.status().message();
  std::vector<RankProcess> ranks(3);
  for (int r = 0; r < 3; ++r) {
    std::vector<std::string> args = generate_args(programs, 40, 0);
    args.push_back("--step-pause-ms");
    args.push_back("100");
    ranks[r].start(rank_args(args, r, 3, port.value()), dir / fmt::format("rank{}.err", r));
  }
  // Joined, loaded, decoding: rank 0 has announced its third decode step (slow machines: up to 60 s).
  const auto started = Clock::now();
  while (ranks[0].stderr_text().find("decode step 3\n") == std::string::npos) {
    ASSERT_LT(Clock::now() - started, std::chrono::seconds(60)) << "rank 0 never reached decode step 3";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (RankProcess& r : ranks) ASSERT_EQ(waitpid(r.pid, &r.status, WNOHANG), 0) << "a rank ended before the kill";
  kill(ranks[victim].pid, SIGKILL);
  const auto killed_at = Clock::now();
  ASSERT_TRUE(ranks[victim].wait(2000));
  for (int r = 0; r < 3; ++r) {
    if (r == victim) continue;
    SCOPED_TRACE(::testing::Message() << "rank " << r);
    ASSERT_TRUE(ranks[r].wait(2000)) << "still running 2 s after rank " << victim << " was killed";
    EXPECT_LT(ranks[r].ended - killed_at, std::chrono::milliseconds(2000));
    EXPECT_EQ(ranks[r].exit_code(), dist::kExitRankFailed) << ranks[r].stderr_text();
    EXPECT_NE(ranks[r].stderr_text().find(fmt::format("dsv41-rt: rank {}: stopped: another rank failed: rank {} (",
                                                      r, victim)),
              std::string::npos)
        << ranks[r].stderr_text();
    EXPECT_NE(ranks[r].stderr_text().find("connection closed without a stop"), std::string::npos)
        << ranks[r].stderr_text();
  }
}

TEST(RankProcesses, KillingAFollowerMidDecodeEndsTheOthersWithinTwoSeconds) { kill_one_mid_decode(1); }
TEST(RankProcesses, KillingRankZeroMidDecodeEndsTheFollowersWithinTwoSeconds) { kill_one_mid_decode(0); }

TEST(RankProcesses, MismatchedProgramsAreRefusedOnEveryRankWithOneMessage) {
  test::TempDir dir("agree");
  ServingSettings other = test::small_settings();
  other.context = 32;
  test::write_programs(dir / "a", test::tiny_pack("release"), 2, test::small_settings());
  test::write_programs(dir / "b", test::tiny_pack("release"), 2, other);
  auto port = dist::pick_free_port();
  ASSERT_TRUE(port.is_ok());
  std::vector<RankProcess> ranks(2);
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> args = generate_args(dir / (r == 0 ? "a" : "b") / fmt::format("rank{}.fb", r), 4, 0);
    ranks[r].start(rank_args(args, r, 2, port.value()), dir / fmt::format("rank{}.err", r));
  }
  std::string first_line;
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(ranks[r].wait(10000));
    EXPECT_EQ(ranks[r].exit_code(), 1) << ranks[r].stderr_text();
    const std::string prefix = fmt::format("dsv41-rt: error: rank {}: ", r);
    const std::string text = ranks[r].stderr_text();
    ASSERT_EQ(text.rfind(prefix, 0), 0u) << text;
    EXPECT_NE(text.find("ranks disagree at start-up: agreement_digest: rank 0 "), std::string::npos) << text;
    EXPECT_NE(text.find("settings: rank 0 (context 64, "), std::string::npos) << text;
    EXPECT_NE(text.find("rank 1 (context 32, "), std::string::npos) << text;
    if (r == 0) first_line = text.substr(prefix.size());
    else EXPECT_EQ(text.substr(prefix.size()), first_line) << "every rank refuses with the same message";
  }
}

TEST(RankProcesses, LaunchReportsTheFirstFailure) {
  test::TempDir dir("first");
  const test::fs::path programs = dir / "w2";
  test::write_programs(programs, test::tiny_pack("release"), 2, test::small_settings());
  test::fs::remove(programs / "rank1.fb");  // rank 1 fails before it joins; rank 0 stops waiting after 1 s
  std::vector<std::string> args = {"launch", "--world", "2"};
  for (const std::string& a : generate_args(programs, 4, 0)) args.push_back(a);
  args.push_back("--connect-timeout-ms");
  args.push_back("1000");
  const test::CommandResult run = test::run_dsv41rt(args);
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_NE(run.err.find("dsv41-rt launch: first failure: rank 1 (pid "), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find("rank1.fb"), std::string::npos) << run.describe();
  EXPECT_NE(run.err.find("ranks 1 did not join within 1000 ms"), std::string::npos) << run.describe();
}

TEST(RankProcesses, LaunchWithoutAWorldIsAUsageError) {
  const test::CommandResult run = test::run_dsv41rt({"launch", "generate", "/nonexistent", "--model", "/nonexistent"});
  EXPECT_EQ(run.exit_code, 2) << run.describe();
  EXPECT_NE(run.err.find("give --world W (CPU ranks) or --gpus 0,1,..."), std::string::npos) << run.describe();
}

// --gpus takes one comma-separated token: COMMAND and its arguments reach every rank (here they fail on
// the missing folder, which shows they arrived); a malformed list is a usage error.
TEST(RankProcesses, LaunchGpusTakesOneListAndLeavesTheCommandToTheRanks) {
  const test::CommandResult run =
      test::run_dsv41rt({"launch", "--gpus", "0,1", "generate", "/nonexistent-w2", "--model", "/nonexistent",
                         "--prompt-ids", "1", "--max-tokens", "1"});
  EXPECT_EQ(run.exit_code, 1) << run.describe();
  EXPECT_NE(run.err.find("rank 1: /nonexistent-w2"), std::string::npos) << run.describe();
  const test::CommandResult bad = test::run_dsv41rt({"launch", "--gpus", "0,x", "generate", "/nonexistent-w2"});
  EXPECT_EQ(bad.exit_code, 2) << bad.describe();
  EXPECT_NE(bad.err.find("--gpus \"0,x\": item \"x\" is not a GPU ordinal (0..9999, comma separated, e.g. 0,1)"),
            std::string::npos)
      << bad.describe();
}

// SIGTERM to the launcher reaches every rank; the launcher ends with the first rank's signal.
TEST(RankProcesses, LaunchForwardsSigterm) {
  test::TempDir dir("term");
  const test::fs::path programs = dir / "w2";
  test::write_programs(programs, test::tiny_pack("release"), 2, test::small_settings());
  std::vector<std::string> args = {"launch", "--world", "2"};
  for (const std::string& a : generate_args(programs, 40, 0)) args.push_back(a);
  args.push_back("--step-pause-ms");
  args.push_back("100");
  RankProcess launcher;
  launcher.start(args, dir / "launch.err");
  const auto started = Clock::now();
  while (launcher.stderr_text().find("decode step 3\n") == std::string::npos) {
    ASSERT_LT(Clock::now() - started, std::chrono::seconds(60)) << "rank 0 never reached decode step 3";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(launcher.pid, SIGTERM);
  ASSERT_TRUE(launcher.wait(2000)) << launcher.stderr_text();
  EXPECT_EQ(launcher.exit_code(), 128 + SIGTERM) << launcher.stderr_text();
  EXPECT_NE(launcher.stderr_text().find("dsv41-rt launch: first failure: rank "), std::string::npos)
      << launcher.stderr_text();
  EXPECT_NE(launcher.stderr_text().find("was killed by signal 15"), std::string::npos) << launcher.stderr_text();
}

}  // namespace
}  // namespace dsv41
