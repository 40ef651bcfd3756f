// tests/cuda/cuda_exchange_test.cpp — the exchange of ranks that are threads on one GPU, inside one graph per phase, against the host-staged one (label gpu; skips without a driver): the same bits at every step, graphs == eager, one graph per phase in the boot report; and the decode step time of each exchange (printed, not asserted).
//
// Environment: DSV41_CACHE (the NVRTC cache the plans compile into); DSV41_EXCHANGE_TIMING_PROGRAMS, a
// folder of programs of world 2 to time besides the tiny fixture (with --synthetic-weights 7, e.g. the
// bench fixture), else only the tiny fixture is timed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <regex>

#include <gtest/gtest.h>

#include "runtime/generate.h"
#include "runtime/gpu/cuda_backend.h"
#include "tests/cuda/cuda_test_device.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::cuda_test {
namespace {

namespace fs = std::filesystem;
using Exchange = gpu::CudaBackendOptions::Exchange;

// Forwards to a session and adds the wall time of each decode phase's run to `seconds` (rank 0 only:
// the ranks run in lockstep, so its run is the step).
class TimedSession final : public RankSession {
 public:
  TimedSession(std::unique_ptr<RankSession> inner, std::vector<double>* seconds)
      : inner_(std::move(inner)), seconds_(seconds) {}
  int rank() const override { return inner_->rank(); }
  const std::vector<Phase>& phases() const override { return inner_->phases(); }
  const Phase* find_phase(const std::string& name) const override { return inner_->find_phase(name); }
  Status run(const Phase& phase, const std::vector<int32_t>& statics) override {
    const auto start = std::chrono::steady_clock::now();
    Status status = inner_->run(phase, statics);
    if (seconds_ && inner_->rank() == 0 && phase.kind == PhaseKind::Decode)
      seconds_->push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return status;
  }
  Status read_logits(const Phase& phase, int64_t first_row, int64_t rows, float* out) override {
    return inner_->read_logits(phase, first_row, rows, out);
  }
  void reset_slot(int slot) override { inner_->reset_slot(slot); }

 private:
  std::unique_ptr<RankSession> inner_;
  std::vector<double>* seconds_;
};

class TimedBackend final : public Backend {
 public:
  TimedBackend(std::unique_ptr<Backend> inner, std::vector<double>* seconds) : inner_(std::move(inner)), seconds_(seconds) {}
  Result<std::unique_ptr<RankSession>> create(const ProgramFile& program) override {
    DSV41_ASSIGN_OR_RETURN(std::unique_ptr<RankSession> session, inner_->create(program));
    return std::unique_ptr<RankSession>(std::make_unique<TimedSession>(std::move(session), seconds_));
  }
  void abort(const std::string& reason) override { inner_->abort(reason); }

 private:
  std::unique_ptr<Backend> inner_;
  std::vector<double>* seconds_;
};

struct Run {
  Exchange exchange = Exchange::Device;
  bool eager = false;
  std::vector<int> devices;
  std::optional<uint64_t> synthetic_seed;
};

// generate() on the CUDA backend; the boot reports go to `log` (a file the caller reads), decode step
// times to `seconds`.
Result<GenerateResult> on_cuda(GenerateOptions o, const Run& run, std::FILE* log, std::vector<double>* seconds) {
  gpu::CudaBackendOptions cuda;
  cuda.model_dir = o.model_dir;
  cuda.devices = run.devices;
  cuda.eager = run.eager;
  cuda.exchange = run.exchange;
  cuda.synthetic_seed = run.synthetic_seed;
  cuda.log = log;
  o.backend = [cuda, seconds](int world) -> Result<std::unique_ptr<Backend>> {
    DSV41_ASSIGN_OR_RETURN(auto backend, gpu::CudaBackend::open(world, cuda));
    return std::unique_ptr<Backend>(std::make_unique<TimedBackend>(std::move(backend), seconds));
  };
  return generate(o);
}

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
  return text;
}

class CudaExchange : public DeviceTest {};

// Check mode at worlds 2-4 on one GPU: the exchange inside the graphs gives the host-staged exchange's
// bits at every step (both add the partials in rank order in F32), its graphs give its eager run's
// bits, the tokens are the CPU's, and the last rank's boot report counts one graph per phase.
TEST_F(CudaExchange, InsideTheGraphsEqualsHostStagedBitForBitWithOneGraphPerPhase) {
  test::TempDir dir("cuda_exchange");
  const fs::path& pack = test::tiny_pack("release");
  for (int world = 2; world <= 4; ++world) {
    SCOPED_TRACE(::testing::Message() << "world " << world);
    const fs::path programs = dir / ("w" + std::to_string(world));
    plan_world(pack, world, DType::F32, programs);
    const GenerateOptions o = options_for(programs, pack);
    auto cpu = generate(o);
    ASSERT_TRUE(cpu.is_ok()) << cpu.status().message();
    std::FILE* log = std::tmpfile();
    ASSERT_NE(log, nullptr);
    auto device = on_cuda(o, {Exchange::Device, false, {}, {}}, log, nullptr);
    const std::string boot = read_all(log);
    std::fclose(log);
    ASSERT_TRUE(device.is_ok()) << device.status().message();
    auto eager = on_cuda(o, {Exchange::Device, true, {}, {}}, nullptr, nullptr);
    ASSERT_TRUE(eager.is_ok()) << eager.status().message();
    auto host = on_cuda(o, {Exchange::Host, false, {}, {}}, nullptr, nullptr);
    ASSERT_TRUE(host.is_ok()) << host.status().message();
    EXPECT_EQ(device->tokens, cpu->tokens);
    EXPECT_EQ(host->tokens, cpu->tokens);
    EXPECT_EQ(eager->tokens, device->tokens);
    ASSERT_EQ(device->logits.size(), host->logits.size());
    ASSERT_EQ(device->logits.size(), eager->logits.size());
    for (size_t step = 0; step < device->logits.size(); ++step) {
      const size_t bytes = device->logits[step].size() * sizeof(float);
      ASSERT_EQ(host->logits[step].size(), device->logits[step].size());
      ASSERT_EQ(0, std::memcmp(device->logits[step].data(), host->logits[step].data(), bytes))
          << "step " << step << ": the exchange inside the graphs and the host-staged one differ";
      ASSERT_EQ(0, std::memcmp(device->logits[step].data(), eager->logits[step].data(), bytes))
          << "step " << step << ": graph replay and --eager differ";
    }
    // "world of W ranks on one GPU: G graphs for P phases (one per phase, ...)" from the last rank to boot.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(boot, m, std::regex("world of (\\d+) ranks on one GPU: (\\d+) graphs for (\\d+) phases")))
        << boot;
    EXPECT_EQ(std::stoi(m[1]), world);
    EXPECT_EQ(m[2].str(), m[3].str()) << "one graph per phase";
    EXPECT_NE(boot.find("exchange: on the device, inside the graphs"), std::string::npos) << boot;
    if (world == 2) std::printf("boot reports of world 2:\n%s", boot.c_str());
    std::printf("[measured] world %d: %zu steps, device exchange == host exchange == eager bit for bit, tokens == "
                "cpu; %s graphs for %s phases\n",
                world, device->logits.size(), m[2].str().c_str(), m[3].str().c_str());
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Decode step time (rank 0's run of decode.r1, median over the decoded tokens) of each exchange at
// world 2: on one GPU inside the graphs and host-staged, and on GPUs 0 and 1 when there are two.
void time_exchanges(const TestDevice& device, const std::string& what, const GenerateOptions& o,
                    std::optional<uint64_t> seed) {
  std::vector<std::pair<std::string, Run>> runs = {{"one GPU, exchange inside the graphs", {Exchange::Device, false, {}, seed}},
                                                   {"one GPU, host-staged exchange", {Exchange::Host, false, {}, seed}}};
  auto count = device.driver->device_count();
  if (count.is_ok() && *count >= 2) {
    runs.push_back({"GPUs 0,1, default exchange", {Exchange::Device, false, {0, 1}, seed}});
    runs.push_back({"GPUs 0,1, host-staged exchange", {Exchange::Host, false, {0, 1}, seed}});
  }
  std::vector<int32_t> first;
  for (const auto& [name, run] : runs) {
    std::vector<double> seconds;
    auto result = on_cuda(o, run, nullptr, &seconds);
    ASSERT_TRUE(result.is_ok()) << what << ", " << name << ": " << result.status().message();
    if (first.empty()) first = result->tokens;
    EXPECT_EQ(result->tokens, first) << what << ", " << name;
    std::printf("[measured] %s, world 2, %s: decode.r1 step %.3f ms (median of %zu; min %.3f ms)\n", what.c_str(),
                name.c_str(), 1e3 * median(seconds), seconds.size(),
                seconds.empty() ? 0.0 : 1e3 * *std::min_element(seconds.begin(), seconds.end()));
  }
}

TEST_F(CudaExchange, DecodeStepTimeOfEachExchange) {
  test::TempDir dir("cuda_exchange_time");
  const fs::path& pack = test::tiny_pack("release");
  plan_world(pack, 2, DType::BF16, dir.path());
  GenerateOptions o = options_for(dir.path(), pack);
  o.max_tokens = 64;
  o.prompt.resize(8);  // decode from position 8: 64 steps fit the tests' 128-token context
  time_exchanges(device_, "tiny fixture", o, std::nullopt);
  if (const char* programs = std::getenv("DSV41_EXCHANGE_TIMING_PROGRAMS")) {
    GenerateOptions b = options_for(programs, dir / "no-shards-here");
    b.prompt = {5, 6, 7, 8, 9, 10, 11, 12};
    b.max_tokens = 64;
    time_exchanges(device_, std::string("programs ") + programs, b, 7);
  }
}

}  // namespace
}  // namespace dsv41::cuda_test
