// tests/runtime/world_test.cpp — the World over a fake Backend: lockstep rounds, rank 0's logits rows, and the one-failure rule.
#include "runtime/world.h"

#include <atomic>
#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

#include "common/call_list.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41 {
namespace {

// Rank 1 fails on token 13; rank 0 then waits in a pretend collective until the backend is aborted.
class FakeBackend;

class FakeSession final : public RankSession {
 public:
  FakeSession(int rank, FakeBackend& backend) : rank_(rank), backend_(backend) {
    phases_.push_back(Phase{});
    phases_[0].name = "decode.r2";
    phases_[0].rows = 2;
  }
  int rank() const override { return rank_; }
  const std::vector<Phase>& phases() const override { return phases_; }
  const Phase* find_phase(const std::string& name) const override { return name == phases_[0].name ? &phases_[0] : nullptr; }
  Status run(const Phase& phase, const std::vector<int32_t>& statics) override;
  Status read_logits(const Phase&, int64_t first_row, int64_t rows, float* out) override {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < 1280; ++v) out[r * 1280 + v] = static_cast<float>(last_tokens_[first_row + r] * 10000 + v);
    return Status::ok();
  }
  void reset_slot(int slot) override { resets.push_back(slot); }
  std::vector<int> resets;

 private:
  int rank_;
  FakeBackend& backend_;
  std::vector<Phase> phases_;
  std::vector<int32_t> last_tokens_ = {0, 0};
};

class FakeBackend final : public Backend {
 public:
  Result<std::unique_ptr<RankSession>> create(const ProgramFile& program) override {
    ++created;
    return std::unique_ptr<RankSession>(new FakeSession(program.program().rank(), *this));
  }
  void abort(const std::string& reason) override {
    std::lock_guard lock(mutex);
    ++aborts;
    if (this->reason.empty()) this->reason = reason;
    wake.notify_all();
  }
  std::atomic<int> created{0};
  std::mutex mutex;
  std::condition_variable wake;
  int aborts = 0;
  std::string reason;
};

Status FakeSession::run(const Phase&, const std::vector<int32_t>& statics) {
  last_tokens_ = {statics[kStaticToken], statics[kStaticsFields + kStaticToken]};
  if (statics[kStaticToken] != 13) return Status::ok();
  if (rank_ == 1) return Status::error("token 13 is unlucky");
  std::unique_lock lock(backend_.mutex);
  backend_.wake.wait(lock, [&] { return !backend_.reason.empty(); });
  return Status::errorf("exchange aborted: {}", backend_.reason);
}

RoundPlan plan_with_token(int32_t token) {
  RoundPlan plan;
  plan.reset_slots = {1};
  plan.runs.push_back({"decode.r2", {token, 0, 4, 0, 7, 1, 9, 1}, {1, 0}});
  return plan;
}

TEST(World, RunsEachRoundOnEveryRankAndReturnsRankZerosLogitsRows) {
  std::vector<ProgramFile> programs = test::plan_programs(test::tiny_pack("bf16"), 2, test::small_settings());
  ASSERT_EQ(programs.size(), 2u);
  auto backend = std::make_unique<FakeBackend>();
  FakeBackend& fake = *backend;
  auto world = World::start(std::move(programs), std::move(backend));
  ASSERT_TRUE(world.is_ok()) << world.status().message();
  EXPECT_EQ(fake.created, 2);
  EXPECT_EQ((*world)->facts().world, 2);
  EXPECT_EQ((*world)->facts().vocab, 1280);
  EXPECT_EQ((*world)->facts().decode_rows, (std::vector<int64_t>{1, 2}));
  for (int32_t token : {5, 6}) {
    auto rows = (*world)->run(plan_with_token(token));
    ASSERT_TRUE(rows.is_ok()) << rows.status().message();
    ASSERT_EQ(rows->size(), 2u);
    EXPECT_EQ((*rows)[0][3], 7 * 10000 + 3) << "logits_rows {1, 0}: row 1 first";
    EXPECT_EQ((*rows)[1][3], token * 10000 + 3);
  }
  EXPECT_EQ(fake.aborts, 0);
}

TEST(World, TheFirstFailureAbortsEveryRankAndEndsTheWorld) {
  auto backend = std::make_unique<FakeBackend>();
  FakeBackend& fake = *backend;
  auto world = World::start(test::plan_programs(test::tiny_pack("bf16"), 2, test::small_settings()), std::move(backend));
  ASSERT_TRUE(world.is_ok()) << world.status().message();
  auto failed = (*world)->run(plan_with_token(13));
  ASSERT_FALSE(failed.is_ok());
  EXPECT_EQ(failed.status().message(), "rank 1: token 13 is unlucky") << "the first failure's reason, not rank 0's echo";
  EXPECT_EQ(fake.aborts, 1);
  auto later = (*world)->run(plan_with_token(5));
  ASSERT_FALSE(later.is_ok());
  EXPECT_NE(later.status().message().find("the world has stopped: rank 1: token 13 is unlucky"), std::string::npos)
      << later.status().message();
  EXPECT_EQ((*world)->failure(), "rank 1: token 13 is unlucky");
}

}  // namespace
}  // namespace dsv41
