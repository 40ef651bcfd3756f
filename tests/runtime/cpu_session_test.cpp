// tests/runtime/cpu_session_test.cpp — CpuSession: a rank's dequantized weight slices and the call loop over hand-built phases.
#include "runtime/cpu/cpu_session.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "common/rank_share.h"
#include "runtime/exchange.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41 {
namespace {

using cpu::CpuSession;

// A call that names a weight; sessions load what calls name (these calls are never run).
Call naming_weight(int64_t index) {
  Call call;
  call.op = "linear";
  call.args.push_back({"w", ArgKind::Weight, {index}, 0.0});
  return call;
}

Phase phase_of(const std::string& name, int64_t rows, std::vector<BufferDecl> buffers, std::vector<Call> calls) {
  Phase phase;
  phase.name = name;
  phase.rows = rows;
  phase.buffers = std::move(buffers);
  for (const BufferDecl& b : phase.buffers) phase.arena_bytes = std::max(phase.arena_bytes, b.offset + b.bytes);
  phase.calls = std::move(calls);
  return phase;
}

BufferDecl f32_buffer(const std::string& name, std::vector<int64_t> shape, uint64_t offset) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= d;
  return {name, DType::F32, std::move(shape), offset, n * 4};
}

std::vector<int32_t> statics_rows(const std::vector<std::array<int32_t, kStaticsFields>>& rows) {
  std::vector<int32_t> out;
  for (const auto& row : rows) out.insert(out.end(), row.begin(), row.end());
  return out;
}

class WeightSlices : public ::testing::TestWithParam<std::string> {};

// World 2 rank 1 takes the second half of heads and groups, expert columns [384, 640) of 640 (uneven)
// and the second half of the vocabulary: each local weight must be exactly that part of the whole
// tensor, dequantized (FP8 tiles, FP4 rows with their scales in the release format).
TEST_P(WeightSlices, EqualTheSliceOfTheWholeDequantizedTensor) {
  const std::string format = GetParam();
  const test::fs::path& pack = test::tiny_pack(format);
  const ModelConfig config = test::fixture_config("dsv41-tiny");
  std::vector<ProgramFile> programs = test::plan_programs(pack, 2, test::small_settings());
  ASSERT_EQ(programs.size(), 2u);
  const ProgramFile& program = programs[1];
  const RankShare share = *plan_share(config, 2, 1);

  struct Case {
    std::string name;
    int64_t r0, r1, c0, c1;  // the slice of the logical [rows, cols] tensor; -1: all
    Encoding release_encoding;
  };
  const int64_t hd = config.head_dim, ol = config.o_lora_rank;
  const std::vector<Case> cases = {
      {"layers.0.attn.wq_b.weight", share.heads.begin * hd, share.heads.end * hd, -1, -1, Encoding::FP8Block},
      {"layers.3.attn.wo_b.weight", -1, -1, share.groups.begin * ol, share.groups.end * ol, Encoding::FP8Block},
      {"layers.1.ffn.experts.5.w2.weight", -1, -1, share.expert_cols.begin, share.expert_cols.end, Encoding::FP4Rows},
      {"head.weight", share.vocab_rows.begin, share.vocab_rows.end, -1, -1, Encoding::Plain},
      {"layers.2.attn.attn_sink", -1, -1, share.heads.begin, share.heads.end, Encoding::Plain},
  };
  CallLists calls;
  std::vector<Call> list;
  for (const Case& c : cases) {
    const int64_t index = test::weight_index(program.program(), c.name);
    ASSERT_GE(index, 0) << c.name;
    list.push_back(naming_weight(index));
  }
  calls.phases.push_back(phase_of("names", 1, {}, list));
  InProcessExchange exchange(2);
  auto session = CpuSession::create(program, std::move(calls), pack.string(), exchange);
  ASSERT_TRUE(session.is_ok()) << session.status().message();
  EXPECT_EQ((*session)->weights().count(), cases.size()) << "only the weights calls name are loaded";

  for (const Case& c : cases) {
    SCOPED_TRACE(format + " " + c.name);
    const int64_t index = test::weight_index(program.program(), c.name);
    const auto encoding = static_cast<Encoding>(program.program().weights()->Get(index)->encoding());
    if (format == "release") {
      EXPECT_EQ(encoding, c.release_encoding);
    }
    int64_t rows = 0, cols = 0;
    const std::vector<float> full = test::dequantized_full_tensor(pack, program.program(), c.name, rows, cols);
    const int64_t r0 = c.r0 < 0 ? 0 : c.r0, r1 = c.r1 < 0 ? rows : c.r1;
    const int64_t c0 = c.c0 < 0 ? 0 : c.c0, c1 = c.c1 < 0 ? cols : c.c1;
    const cpu::WeightView view = (*session)->weights().view(index);
    ASSERT_NE(view.data, nullptr);
    EXPECT_EQ(view.name, c.name);
    const std::vector<int64_t> expected_shape =
        rows == 1 && c.name.find("attn_sink") != std::string::npos ? std::vector<int64_t>{c1 - c0}
                                                                    : std::vector<int64_t>{r1 - r0, c1 - c0};
    ASSERT_EQ(view.shape, expected_shape);
    int64_t nonzero = 0;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t k = c0; k < c1; ++k) {
        const float want = full[r * cols + k], got = view.data[(r - r0) * (c1 - c0) + (k - c0)];
        ASSERT_EQ(std::memcmp(&want, &got, 4), 0) << "row " << r << " column " << k << ": " << got << " vs " << want;
        nonzero += want != 0.0f;
      }
    EXPECT_GT(nonzero, 0) << "synthetic weights are not all zero";
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, WeightSlices, ::testing::Values("release", "bf16"));

// A world-1 session runs a hand-built phase: a linear over a loaded weight, inactive rows left zero.
TEST(CpuSession, RunsHandBuiltCallsOverTheArena) {
  const test::fs::path& pack = test::tiny_pack("bf16");
  const ModelConfig config = test::fixture_config("dsv41-tiny");
  std::vector<ProgramFile> programs = test::plan_programs(pack, 1, test::small_settings());
  ASSERT_EQ(programs.size(), 1u);
  const int64_t index = test::weight_index(programs[0].program(), "layers.0.attn.wq_b.weight");
  const int64_t in = config.q_lora_rank, out = config.num_attention_heads * config.head_dim;
  Call linear;
  linear.op = "linear";
  linear.constants = {{"in_features", in}, {"out_features", out}};
  linear.args = {{"x", ArgKind::Scratch, {0}, 0.0}, {"w", ArgKind::Weight, {index}, 0.0}, {"out", ArgKind::Scratch, {1}, 0.0}};
  Call missing;
  missing.op = "no_such_op";
  CallLists calls;
  calls.phases.push_back(phase_of("test.r3", 3, {f32_buffer("x", {3, in}, 0), f32_buffer("y", {3, out}, 3 * in * 4)}, {linear}));
  calls.phases.push_back(phase_of("bad", 1, {}, {missing}));
  InProcessExchange exchange(1);
  auto created = CpuSession::create(programs[0], std::move(calls), pack.string(), exchange);
  ASSERT_TRUE(created.is_ok()) << created.status().message();
  CpuSession& session = **created;
  EXPECT_EQ(session.slots(), 2);
  EXPECT_EQ(session.context(), 64);
  const Phase& phase = *session.find_phase("test.r3");

  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  cpu::TensorView x = *session.output(phase, "x");
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, normal(rng));
  const auto statics = statics_rows({{5, 1, 0, 0}, {6, -1, 0, 0}, {7, 0, 3, 2}});  // row 1 inactive
  const Status status = session.run(phase, statics);
  ASSERT_TRUE(status.is_ok()) << status.message();
  const cpu::TensorView y = *session.output(phase, "y");
  const cpu::WeightView w = session.weights().view(index);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double want = 0.0;
      for (int64_t k = 0; k < in; ++k) want += static_cast<double>(w.data[o * in + k]) * x.get(r * in + k);
      if (r == 1) want = 0.0;
      ASSERT_NEAR(y.get(r * out + o), want, 1e-4 * (1.0 + std::fabs(want))) << "row " << r << " output " << o;
    }

  auto refused = [&](const std::vector<int32_t>& s) { return session.run(phase, s).message(); };
  EXPECT_NE(refused(statics_rows({{5, 2, 0, 0}, {5, -1, 0, 0}, {5, -1, 0, 0}})).find("slot 2 outside 0..1"), std::string::npos);
  EXPECT_NE(refused(statics_rows({{5, 0, 64, 0}, {5, -1, 0, 0}, {5, -1, 0, 0}})).find("position 64 outside 0..63"),
            std::string::npos);
  EXPECT_NE(refused(statics_rows({{1280, 0, 0, 0}, {5, -1, 0, 0}, {5, -1, 0, 0}})).find("vocab_size 1280"), std::string::npos);
  EXPECT_NE(refused({1, 2, 3}).find("expected 3 rows x 4 fields"), std::string::npos);
  EXPECT_EQ(session.run(*session.find_phase("bad"), statics_rows({{5, 0, 0, 0}})).message(),
            "phase bad call #0 (no_such_op): the CPU backend has no implementation of op no_such_op");
  EXPECT_NE(session.output(phase, "logits").status().message().find("no buffer named \"logits\" (buffers: x, y)"),
            std::string::npos);
  Phase stranger = phase;
  EXPECT_FALSE(session.run(stranger, statics).is_ok()) << "a phase not of this session is refused";
}

}  // namespace
}  // namespace dsv41
