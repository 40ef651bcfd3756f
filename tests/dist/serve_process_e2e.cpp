// tests/dist/serve_process_e2e.cpp — `dsv41-rt serve` with every rank a process: rank 0 answers HTTP as a one-process server of the same programs does, and SIGTERM drains then stops the followers.
#include <signal.h>

#include <chrono>
#include <future>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "runtime/dist/socket.h"
#include "runtime/serve/serving_app.h"
#include "tests/dist/rank_process_runner.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41 {
namespace {

using json = nlohmann::json;
using test::RankProcess;
using Clock = std::chrono::steady_clock;

// The tiny pack at world 2 with 4 slots, context 96, prefill segments 8 and 4, decode buckets 1, 2 and 4.
test::fs::path write_world(const test::TempDir& dir) {
  auto s = test::small_settings();
  s.context = 96;
  s.slots = 4;
  s.decode_rows = {1, 2, 4};
  test::write_programs(dir / "w2", test::tiny_pack("release"), 2, s);
  return dir / "w2";
}

std::vector<std::string> serve_args(const test::fs::path& programs) {
  return {"serve", programs.string(), "--model", test::tiny_pack("release").string(), "--served-model-name", "tiny",
          "--port", "0", "--http-threads", "8"};
}

// The port rank 0 announces on stderr ("listening on http://127.0.0.1:PORT"), waiting up to 60 s.
int announced_port(const RankProcess& rank0) {
  static const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
  const auto started = Clock::now();
  for (;;) {
    std::smatch m;
    const std::string err = rank0.stderr_text();
    if (std::regex_search(err, m, listening)) return std::stoi(m[1]);
    if (Clock::now() - started > std::chrono::seconds(60)) {
      ADD_FAILURE() << "rank 0 never announced its port; stderr:\n" << err;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

httplib::Client client(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  return c;
}

// A reply without what differs between two servers by design (its id and creation time; every
// request gives its seed, so the reply's seed is the same).
json comparable(const std::string& body) {
  json reply = json::parse(body);
  reply.erase("id");
  reply.erase("created");
  return reply;
}

json post(int port, const json& request) {
  auto res = client(port).Post("/v1/completions", request.dump(), "application/json");
  if (!res) return {{"transport_error", httplib::to_string(res.error())}};
  if (res->status != 200) return {{"status", res->status}, {"body", res->body}};
  if (!request.value("stream", false)) return comparable(res->body);
  json chunks = json::array();  // each event's data, without its id and time
  std::istringstream events(res->body);
  for (std::string line; std::getline(events, line);)
    if (line.rfind("data: {", 0) == 0) chunks.push_back(comparable(line.substr(6)));
    else if (line == "data: [DONE]") chunks.push_back("[DONE]");
  return chunks;
}

// The same requests, one at a time and then all at once, at a one-process server of the same programs
// (every rank a thread) and at rank 0 of two rank processes, give the same replies: tokens,
// logprobs (so the logits), finish reasons, seeds.
TEST(ServeProcesses, RankZeroOfTwoProcessesAnswersAsOneProcessDoes) {
  test::TempDir dir("serve-procs");
  const test::fs::path programs = write_world(dir);
  const std::vector<json> requests = {
      {{"model", "tiny"}, {"prompt", {5, 6, 7, 8, 9}}, {"max_tokens", 12}, {"temperature", 0}, {"logprobs", 2},
       {"seed", 1}, {"ignore_eos", true}},
      {{"model", "tiny"}, {"prompt", {300, 301, 17, 4, 1000, 12, 13, 14, 15, 16}}, {"max_tokens", 9},
       {"temperature", 0.8}, {"seed", 11}, {"ignore_eos", true}},
      {{"model", "tiny"}, {"prompt", {42}}, {"max_tokens", 6}, {"temperature", 0}, {"seed", 2}, {"ignore_eos", true}}};

  serve::ServeConfig config;
  config.program = (programs / "rank0.fb").string();
  config.model_dir = test::tiny_pack("release").string();
  config.model_name = "tiny";
  config.http.port = 0;
  auto app = serve::ServingApp::start(config);
  ASSERT_TRUE(app.is_ok()) << app.status().message();
  std::thread one_process([&] { (*app)->run(); });
  std::vector<json> want;
  for (const json& r : requests) want.push_back(post((*app)->port(), r));
  json streamed = requests[0];
  streamed["stream"] = true;
  const json want_stream = post((*app)->port(), streamed);
  (*app)->begin_drain();
  one_process.join();
  ASSERT_FALSE(want[0].contains("status")) << want[0].dump();

  RankProcess launcher;
  std::vector<std::string> args = {"launch", "--world", "2"};
  for (const std::string& a : serve_args(programs)) args.push_back(a);
  launcher.start(args, dir / "launch.err");
  const int port = announced_port(launcher);
  ASSERT_GT(port, 0);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(post(port, requests[i]), want[i]) << "request " << i;
  std::vector<std::future<json>> together;
  for (const json& r : requests) together.push_back(std::async(std::launch::async, [&, r] { return post(port, r); }));
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(together[i].get(), want[i]) << "concurrent request " << i;
  EXPECT_EQ(post(port, streamed), want_stream);

  kill(launcher.pid, SIGTERM);  // launch forwards it to both ranks: rank 0 drains, rank 1 waits for its stop
  ASSERT_TRUE(launcher.wait(10000)) << launcher.stderr_text();
  EXPECT_EQ(launcher.exit_code(), 0) << launcher.stderr_text();
}

// Waits until `n` slots are busy on rank 0.
void wait_busy(int port, double n) {
  auto c = client(port);
  for (int i = 0; i < 2000; ++i) {
    auto res = c.Get("/metrics");
    if (res && res->body.find("dsv41_slots_busy " + std::to_string(static_cast<int>(n))) != std::string::npos) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << "never " << n << " busy slots";
}

// SIGTERM on rank 0 (and on the follower, as launch forwards it) mid-request: new requests get 503,
// the running one completes, then rank 0 stops the follower and both exit 0.
TEST(ServeProcesses, SigtermOnRankZeroDrainsThenStopsTheFollowers) {
  test::TempDir dir("serve-drain");
  const test::fs::path programs = write_world(dir);
  auto master = dist::pick_free_port();
  ASSERT_TRUE(master.is_ok()) << master.status().message();
  std::vector<RankProcess> ranks(2);
  for (int r = 0; r < 2; ++r)
    ranks[r].start(test::rank_args(serve_args(programs), r, 2, master.value()), dir / fmt::format("rank{}.err", r));
  const int port = announced_port(ranks[0]);
  ASSERT_GT(port, 0);
  const json long_request = {{"model", "tiny"}, {"prompt", {3, 4, 5}}, {"max_tokens", 80}, {"ignore_eos", true}};
  auto running = std::async(std::launch::async, [&] { return client(port).Post("/v1/completions", long_request.dump(), "application/json"); });
  wait_busy(port, 1);
  kill(ranks[1].pid, SIGTERM);
  kill(ranks[0].pid, SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the signal thread begins the drain
  auto refused = client(port).Post("/v1/completions", long_request.dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503) << refused->body;
  EXPECT_NE(refused->body.find("draining"), std::string::npos) << refused->body;
  auto done = running.get();
  ASSERT_TRUE(done);
  EXPECT_EQ(done->status, 200) << done->body;
  EXPECT_EQ(json::parse(done->body)["usage"]["completion_tokens"], 80);
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(ranks[r].wait(10000)) << "rank " << r << " still running; stderr:\n" << ranks[r].stderr_text();
    EXPECT_EQ(ranks[r].exit_code(), 0) << "rank " << r << ":\n" << ranks[r].stderr_text();
  }
  EXPECT_NE(ranks[0].stderr_text().find("dsv41-rt serve: stopped"), std::string::npos) << ranks[0].stderr_text();
}

}  // namespace
}  // namespace dsv41
