// tests/runtime/exchange_test.cpp — the in-process exchange: rank-ordered sums with identical bits, uneven gathers, abort.
#include "runtime/exchange.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include <gtest/gtest.h>

namespace dsv41 {
namespace {

// Runs body(rank) on `world` threads and waits for all.
void on_ranks(int world, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) threads.emplace_back(body, rank);
  for (auto& t : threads) t.join();
}

// Values spread over many magnitudes, so a different order of addition gives different bits.
std::vector<float> spread_values(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = std::ldexp(mantissa(rng), exponent(rng));
  return v;
}

TEST(InProcessExchange, SumAddsInRankOrderAndEveryRankGetsTheSameBits) {
  constexpr int kWorld = 4, kCalls = 40;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed << ", world " << kWorld);
  std::mt19937 rng(seed);
  std::vector<std::vector<std::vector<float>>> inputs(kCalls);  // [call][rank]
  std::vector<int64_t> sizes(kCalls);
  for (int c = 0; c < kCalls; ++c) {
    sizes[c] = 1 + static_cast<int64_t>(rng() % 3000);
    for (int r = 0; r < kWorld; ++r) inputs[c].push_back(spread_values(rng, sizes[c]));
  }
  InProcessExchange exchange(kWorld);
  std::vector<std::vector<std::vector<float>>> outputs(kWorld, std::vector<std::vector<float>>(kCalls));
  on_ranks(kWorld, [&](int rank) {
    for (int c = 0; c < kCalls; ++c) {
      outputs[rank][c].assign(sizes[c], 0.0f);
      exchange.sum(rank, inputs[c][rank].data(), sizes[c], outputs[rank][c].data());
    }
  });
  for (int c = 0; c < kCalls; ++c) {
    std::vector<float> expected = inputs[c][0];
    for (int r = 1; r < kWorld; ++r)
      for (int64_t i = 0; i < sizes[c]; ++i) expected[i] += inputs[c][r][i];
    for (int r = 0; r < kWorld; ++r)
      ASSERT_EQ(0, std::memcmp(expected.data(), outputs[r][c].data(), expected.size() * sizeof(float)))
          << "call " << c << " (" << sizes[c] << " floats): rank " << r << " differs from (((x0 + x1) + x2) + x3)";
  }
}

TEST(InProcessExchange, GatherConcatenatesUnevenWidthsInRankOrder) {
  const std::vector<int64_t> widths = {3, 0, 5, 2};  // a rank may contribute nothing
  const int world = static_cast<int>(widths.size());
  const int64_t rows = 7, total = 10;
  InProcessExchange exchange(world);
  std::vector<std::vector<float>> outputs(world, std::vector<float>(rows * total, -1.0f));
  auto value = [](int rank, int64_t row, int64_t col) { return static_cast<float>(rank * 1000 + row * 10 + col); };
  on_ranks(world, [&](int rank) {
    for (int repeat = 0; repeat < 20; ++repeat) {  // reusable: many calls on the same exchange
      std::vector<float> x(rows * widths[rank]);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < widths[rank]; ++c) x[r * widths[rank] + c] = value(rank, r, c) + repeat;
      exchange.gather(rank, x.data(), rows, widths, outputs[rank].data());
    }
  });
  for (int rank = 0; rank < world; ++rank)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t column = 0;
      for (int owner = 0; owner < world; ++owner)
        for (int64_t c = 0; c < widths[owner]; ++c, ++column)
          ASSERT_EQ(outputs[rank][r * total + column], value(owner, r, c) + 19)
              << "rank " << rank << " row " << r << " column " << column << " (rank " << owner << "'s column " << c << ")";
    }
}

TEST(InProcessExchange, AbortWakesEveryWaitingRankWithTheFirstReason) {
  constexpr int kWorld = 4;
  InProcessExchange exchange(kWorld);
  std::vector<std::string> caught(kWorld);
  on_ranks(kWorld, [&](int rank) {
    std::vector<float> x(16, 1.0f), out(16);
    if (rank == 3) {  // the failing rank never joins the collective
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      EXPECT_TRUE(exchange.abort("rank 3: boom"));
      EXPECT_FALSE(exchange.abort("rank 3: a second reason is dropped"));
      return;
    }
    try {
      exchange.sum(rank, x.data(), 16, out.data());
    } catch (const ExchangeAborted& e) {
      caught[rank] = e.what();
    }
  });
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(caught[rank], "rank 3: boom") << "rank " << rank;
  EXPECT_TRUE(exchange.aborted());
  // Every later collective fails at once, without waiting for anyone.
  std::vector<float> x(4), out(8);
  EXPECT_THROW(exchange.sum(0, x.data(), 4, out.data()), ExchangeAborted);
  EXPECT_THROW(exchange.gather(1, x.data(), 1, {1, 1, 1, 1}, out.data()), ExchangeAborted);
}

TEST(InProcessExchange, RanksThatDisagreeOnSizesAllFailWithOneMessage) {
  InProcessExchange exchange(2);
  std::vector<std::string> caught(2);
  on_ranks(2, [&](int rank) {
    const int64_t n = rank == 0 ? 4 : 5;
    std::vector<float> x(n, 1.0f), out(n);
    try {
      exchange.sum(rank, x.data(), n, out.data());
    } catch (const ExchangeAborted& e) {
      caught[rank] = e.what();
    }
  });
  EXPECT_EQ(caught[0], caught[1]);
  EXPECT_NE(caught[0].find("rank 0 has 4 floats but rank 1 has 5"), std::string::npos) << caught[0];
}

TEST(InProcessExchange, WorldOfOneCopies) {
  InProcessExchange exchange(1);
  std::vector<float> x = {1.5f, -2.0f}, out(2);
  exchange.sum(0, x.data(), 2, out.data());
  EXPECT_EQ(out, x);
  exchange.gather(0, x.data(), 2, {1}, out.data());
  EXPECT_EQ(out, x);
}

}  // namespace
}  // namespace dsv41
