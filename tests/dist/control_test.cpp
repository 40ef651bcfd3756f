// tests/dist/control_test.cpp — the control connection with ranks as threads over loopback: join, agreement, commands, the socket exchange, and every failure a peer can cause.
#include "runtime/dist/control.h"

#include <atomic>
#include <future>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "runtime/dist/socket_exchange.h"
#include "runtime/exchange.h"

namespace dsv41::dist {
namespace {

RankFacts facts(int rank, int world) {
  RankFacts f;
  f.rank = rank;
  f.world = world;
  f.agreement_digest = 7;
  f.settings = "context 64";
  f.arch = "cpu";
  f.build = build_version();
  return f;
}

ControlOptions options(int rank, int world, int port) {
  ControlOptions o;
  o.rank = rank;
  o.world = world;
  o.master = HostPort{"127.0.0.1", port};
  o.connect_timeout_ms = 5000;
  return o;
}

int free_port() {
  auto port = pick_free_port();
  EXPECT_TRUE(port.is_ok()) << port.status().message();
  return port.is_ok() ? port.value() : 0;
}

// Joins `world` ranks, each on its own thread, with facts changed by `edit`; returns each rank's control.
std::vector<Result<std::unique_ptr<Control>>> join_world(int world, int port,
                                                         const std::function<void(int, RankFacts&)>& edit = {}) {
  std::vector<std::future<Result<std::unique_ptr<Control>>>> futures;
  for (int r = 0; r < world; ++r)
    futures.push_back(std::async(std::launch::async, [=] {
      RankFacts f = facts(r, world);
      if (edit) edit(r, f);
      return Control::join(options(r, world, port), f);
    }));
  std::vector<Result<std::unique_ptr<Control>>> out;
  for (auto& f : futures) out.push_back(f.get());
  return out;
}

TEST(Control, JoinsCarriesCommandsAndStops) {
  auto world = join_world(3, free_port());
  for (auto& c : world) ASSERT_TRUE(c.is_ok()) << c.status().message();
  Control& leader = *world[0].value();
  const std::vector<uint8_t> plan = {1, 2, 3, 250};
  ASSERT_TRUE(leader.broadcast(FrameType::RoundPlan, plan).is_ok());
  const std::vector<uint8_t> fields = PayloadWriter().str("decode.r1").i32s({5, 0, 3, 0}).take();
  ASSERT_TRUE(leader.broadcast(FrameType::RoundPlan, fields).is_ok());
  std::vector<std::future<Status>> followers;
  for (int r = 1; r < 3; ++r)
    followers.push_back(std::async(std::launch::async, [&, r]() -> Status {
      Control& c = *world[r].value();
      DSV41_ASSIGN_OR_RETURN(Frame a, c.next_command());
      if (a.type != FrameType::RoundPlan || a.payload != plan) return Status::error("round plan bytes changed");
      DSV41_ASSIGN_OR_RETURN(Frame b, c.next_command());
      PayloadReader reader(b.payload, "RoundPlan");
      if (b.type != FrameType::RoundPlan || reader.str("phase") != "decode.r1" ||
          reader.i32s("statics") != std::vector<int32_t>{5, 0, 3, 0})
        return Status::error("the second frame's fields changed");
      DSV41_ASSIGN_OR_RETURN(Frame stop, c.next_command());
      if (stop.type != FrameType::Stop) return Status::error("expected Stop");
      return c.stop();
    }));
  // The followers return after Stop and close their links: stop() sees every link closed.
  std::thread closer([&] {
    for (auto& f : followers) EXPECT_TRUE(f.get().is_ok());
    world[1] = Status::error("closed");
    world[2] = Status::error("closed");
  });
  EXPECT_TRUE(leader.stop().is_ok());
  closer.join();
}

// The NCCL unique id goes from rank 0 to every follower over the control connection, byte for byte.
TEST(Control, ShareCommIdHandsRankZerosIdToEveryFollower) {
  auto world = join_world(3, free_port());
  for (auto& c : world) ASSERT_TRUE(c.is_ok()) << c.status().message();
  std::vector<uint8_t> id(128);
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<uint8_t>(i * 37 + 11);
  std::vector<std::future<Result<std::vector<uint8_t>>>> shared;
  for (int r = 0; r < 3; ++r)
    shared.push_back(std::async(std::launch::async, [&, r] {
      return world[r].value()->share_comm_id(r == 0 ? id : std::vector<uint8_t>(128, 0));
    }));
  for (int r = 0; r < 3; ++r) {
    auto got = shared[r].get();
    ASSERT_TRUE(got.is_ok()) << "rank " << r << ": " << got.status().message();
    EXPECT_EQ(*got, id) << "rank " << r;
  }
  // A follower expecting an id of another size refuses it, naming rank 0 and both sizes.
  ASSERT_TRUE(world[0].value()->broadcast(FrameType::CommId, PayloadWriter().raw(std::vector<uint8_t>(5, 1)).take()).is_ok());
  auto refused = world[1].value()->share_comm_id(std::vector<uint8_t>(128, 0));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.status().message().find("rank 0"), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("CommId of 5 bytes, expected 128"), std::string::npos)
      << refused.status().message();
}

// Rank 0 heartbeats each follower from the moment it joins, so an early follower outlives the
// watchdog while a late one is still starting.
TEST(Control, ALateFollowerDoesNotTripTheEarlyOnesWatchdog) {
  const int port = free_port();
  std::vector<std::future<Result<std::unique_ptr<Control>>>> futures;
  for (int r = 0; r < 3; ++r)
    futures.push_back(std::async(std::launch::async, [=] {
      if (r == 2) std::this_thread::sleep_for(std::chrono::milliseconds(500));
      ControlOptions o = options(r, 3, port);
      o.watchdog_ms = 200;
      o.heartbeat_ms = 40;
      return Control::join(o, facts(r, 3));
    }));
  for (auto& f : futures) {
    auto c = f.get();
    EXPECT_TRUE(c.is_ok()) << c.status().message();
  }
}

TEST(Control, AgreementMismatchRefusesEveryRankWithOneMessage) {
  auto world = join_world(3, free_port(), [](int r, RankFacts& f) {
    if (r == 2) f.pack_digest = 0xbad;
  });
  for (auto& c : world) ASSERT_FALSE(c.is_ok());
  const std::string& message = world[0].status().message();
  EXPECT_NE(message.find("pack_digest: rank 0 0000000000000000, rank 1 0000000000000000, rank 2 0000000000000bad"),
            std::string::npos)
      << message;
  EXPECT_EQ(world[1].status().message(), message);
  EXPECT_EQ(world[2].status().message(), message);
}

TEST(Control, SocketExchangeGivesTheInProcessBits) {
  constexpr int kWorld = 3;
  auto world = join_world(kWorld, free_port());
  for (auto& c : world) ASSERT_TRUE(c.is_ok()) << c.status().message();
  std::mt19937 rng(41);
  std::normal_distribution<float> normal(0.f, 3.f);
  const int64_t n = 1000, rows = 3;
  const std::vector<int64_t> widths = {5, 0, 7};
  std::vector<std::vector<float>> x(kWorld), cols(kWorld);
  for (int r = 0; r < kWorld; ++r) {
    for (int64_t i = 0; i < n; ++i) x[r].push_back(normal(rng));
    for (int64_t i = 0; i < rows * widths[r]; ++i) cols[r].push_back(normal(rng));
  }
  auto run = [&](cpu::Exchange& exchange, int r, std::vector<float>& sum, std::vector<float>& gathered) {
    sum.assign(n, 0.f);
    gathered.assign(rows * 12, 0.f);
    exchange.sum(r, x[r].data(), n, sum.data());
    exchange.gather(r, cols[r].data(), rows, widths, gathered.data());
  };
  InProcessExchange in_process(kWorld);
  std::vector<std::vector<float>> want_sum(kWorld), want_gather(kWorld), sum(kWorld), gathered(kWorld);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) threads.emplace_back([&, r] { run(in_process, r, want_sum[r], want_gather[r]); });
  for (auto& t : threads) t.join();
  threads.clear();
  for (int r = 0; r < kWorld; ++r)
    threads.emplace_back([&, r] {
      SocketExchange exchange(*world[r].value());
      run(exchange, r, sum[r], gathered[r]);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(std::memcmp(sum[r].data(), want_sum[0].data(), n * 4), 0) << "rank " << r;
    EXPECT_EQ(gathered[r], want_gather[0]) << "rank " << r;
  }
}

// Ranks that disagree on a sum's size fail together: rank 0 names the follower and both sizes.
TEST(Control, SocketExchangeRefusesRanksThatDisagreeOnSizes) {
  auto world = join_world(2, free_port());
  for (auto& c : world) ASSERT_TRUE(c.is_ok()) << c.status().message();
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      SocketExchange exchange(*world[r].value());
      std::vector<float> x(12, 1.f), out(12);
      try {
        exchange.sum(r, x.data(), r == 0 ? 12 : 10, out.data());
      } catch (const ExchangeAborted& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0].rfind("rank 1 (127.0.0.1:", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find("ExchangeSum (rank 0 sums 12 floats): field values has 10 floats, expected 12"),
            std::string::npos)
      << errors[0];
  EXPECT_EQ(errors[1], "rank 0: " + errors[0]) << "the follower gets rank 0's reason";
}

// A raw connection to rank 0, to play a follower that misbehaves.
struct FakeFollower {
  Socket socket;
  void send(FrameType type, const std::vector<uint8_t>& payload) {
    const auto header = encode_header(type, static_cast<uint32_t>(payload.size()));
    ASSERT_TRUE(send_all(socket, header.data(), header.size(), "rank 0").is_ok());
    ASSERT_TRUE(send_all(socket, payload.data(), payload.size(), "rank 0").is_ok());
  }
};

FakeFollower connect_fake(int port) {
  auto s = connect_before(HostPort{"127.0.0.1", port}, Clock::now() + std::chrono::seconds(5));
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return FakeFollower{s.is_ok() ? std::move(s).value() : Socket()};
}

TEST(Control, GarbageInsteadOfAHelloIsRefusedNamingThePeer) {
  const int port = free_port();
  auto leader = std::async(std::launch::async, [&] { return Control::join(options(0, 2, port), facts(0, 2)); });
  FakeFollower fake = connect_fake(port);
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(send_all(fake.socket, http.data(), http.size(), "rank 0").is_ok());
  auto result = leader.get();
  ASSERT_FALSE(result.is_ok());
  EXPECT_NE(result.status().message().find("frame magic 0x20544547, expected 0x43313444"), std::string::npos)
      << result.status().message();
  EXPECT_EQ(result.status().message().rfind("peer 127.0.0.1:", 0), 0u) << result.status().message();
}

// Rank 0 with one fake follower that joined properly; `on_failure` gets the reason and its time.
struct JoinedLeader {
  std::unique_ptr<Control> control;
  FakeFollower fake;
  std::promise<std::string> reason;
  Clock::time_point failed_at;
};

void join_with_fake(JoinedLeader& j, int watchdog_ms) {
  const int port = free_port();
  ControlOptions o = options(0, 2, port);
  o.watchdog_ms = watchdog_ms;
  o.on_peer_failure = [&j](const std::string& reason) {
    j.failed_at = Clock::now();
    j.reason.set_value(reason);
  };
  auto leader = std::async(std::launch::async, [&] { return Control::join(o, facts(0, 2)); });
  j.fake = connect_fake(port);
  j.fake.send(FrameType::Hello, encode_facts(facts(1, 2)));
  auto joined = leader.get();
  ASSERT_TRUE(joined.is_ok()) << joined.status().message();
  j.control = std::move(joined).value();
}

std::string wait_reason(JoinedLeader& j, int limit_ms) {
  auto future = j.reason.get_future();
  if (future.wait_for(std::chrono::milliseconds(limit_ms)) != std::future_status::ready) return "(no failure seen)";
  return future.get();
}

TEST(Control, AnOversizedFrameFailsTheWorldNamingRankAndLength) {
  JoinedLeader j;
  ASSERT_NO_FATAL_FAILURE(join_with_fake(j, 1500));
  const auto header = encode_header(FrameType::ExchangeSum, 0);
  std::array<uint8_t, kFrameHeaderBytes> big = header;
  const uint32_t length = 0xfffffff0u;
  std::memcpy(big.data() + 8, &length, 4);
  ASSERT_TRUE(send_all(j.fake.socket, big.data(), big.size(), "rank 0").is_ok());
  const std::string reason = wait_reason(j, 2000);
  EXPECT_NE(reason.find("rank 1 (127.0.0.1:"), std::string::npos) << reason;
  EXPECT_NE(reason.find("ExchangeSum frame of 4294967280 bytes exceeds the limit of 268435456 bytes"), std::string::npos)
      << reason;
  // The main thread, waiting on the link, sees the same reason.
  auto frame = j.control->link(1).receive(FrameType::ExchangeSum);
  ASSERT_FALSE(frame.is_ok());
  EXPECT_EQ(frame.status().message(), reason);
}

TEST(Control, AVanishedPeerIsNoticedAtOnce) {
  JoinedLeader j;
  ASSERT_NO_FATAL_FAILURE(join_with_fake(j, 1500));
  const auto closed_at = Clock::now();
  j.fake.socket.close();
  const std::string reason = wait_reason(j, 2000);
  EXPECT_NE(reason.find("rank 1 (127.0.0.1:"), std::string::npos) << reason;
  EXPECT_NE(reason.find("connection closed without a stop"), std::string::npos) << reason;
  EXPECT_LT(j.failed_at - closed_at, std::chrono::milliseconds(500));
}

TEST(Control, ASilentPeerTripsTheWatchdog) {
  JoinedLeader j;
  ASSERT_NO_FATAL_FAILURE(join_with_fake(j, 300));  // the fake never heartbeats
  const std::string reason = wait_reason(j, 2000);
  EXPECT_NE(reason.find("rank 1 (127.0.0.1:"), std::string::npos) << reason;
  EXPECT_NE(reason.find("(watchdog limit 300 ms)"), std::string::npos) << reason;
}

TEST(Control, RankZeroRelaysAFollowersFailureToTheOthers) {
  const int port = free_port();
  std::promise<std::string> seen_by_2;
  std::vector<std::future<Result<std::unique_ptr<Control>>>> futures;
  for (int r = 0; r < 3; ++r)
    futures.push_back(std::async(std::launch::async, [&, r] {
      ControlOptions o = options(r, 3, port);
      if (r == 2) o.on_peer_failure = [&](const std::string& reason) { seen_by_2.set_value(reason); };
      return Control::join(o, facts(r, 3));
    }));
  std::vector<std::unique_ptr<Control>> world;
  for (auto& f : futures) {
    auto c = f.get();
    ASSERT_TRUE(c.is_ok()) << c.status().message();
    world.push_back(std::move(c).value());
  }
  world[1]->fail(rank_reason(1, "phase decode.r1 call #3 (linear): out of memory"));
  auto future = seen_by_2.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(2)), std::future_status::ready);
  EXPECT_EQ(future.get(), "rank 1: phase decode.r1 call #3 (linear): out of memory");
  auto frame = world[0]->link(2).receive_any();
  ASSERT_FALSE(frame.is_ok());
  EXPECT_EQ(frame.status().message(), "rank 1: phase decode.r1 call #3 (linear): out of memory");
}

}  // namespace
}  // namespace dsv41::dist
