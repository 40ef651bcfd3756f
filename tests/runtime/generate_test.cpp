// tests/runtime/generate_test.cpp — generate(): in check mode the same tokens at every world and segment size, eos, and each refusal.
#include "runtime/generate.h"

#include <cmath>
#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/runtime/runtime_fixtures.h"

namespace dsv41 {
namespace {

const std::vector<int32_t> kPrompt = {5, 6, 7, 8, 9, 10, 300, 301, 1000, 17, 4};  // 11 rows: 2 segments of 8, 3 of 4

GenerateOptions options_for(const test::fs::path& programs, int max_tokens, int64_t segment_rows) {
  return test::tiny_generate_options(programs, kPrompt, max_tokens, segment_rows);
}

// Check mode (f32 activations): worlds and segment sizes change only the order of fp32 sums, so the
// logits agree to 1e-3·max|logit| and the greedy tokens are identical. (In bf16 the rank-ordered sums
// round differently and tokens may part across worlds: tests/model/world_match_test.cpp bounds that.)
TEST(Generate, EveryWorldAndSegmentSizeGivesTheSameTokensInCheckMode) {
  test::TempDir dir("worlds");
  const test::fs::path& pack = test::tiny_pack("release");
  ServingSettings settings = test::small_settings();
  settings.activations = DType::F32;
  std::vector<int32_t> reference;
  std::vector<std::vector<float>> reference_logits;
  for (int world : {1, 2, 3}) {
    const test::fs::path programs = dir / ("w" + std::to_string(world));
    test::write_programs(programs, pack, world, settings);
    for (int64_t segment : {0, 4, 1}) {
      SCOPED_TRACE(::testing::Message() << "world " << world << ", segment rows " << segment);
      auto result = generate(options_for(programs, 5, segment));
      ASSERT_TRUE(result.is_ok()) << result.status().message();
      ASSERT_EQ(result->tokens.size(), 5u);
      ASSERT_EQ(result->logits.size(), 5u) << "the prompt's last row, then 4 decode steps";
      for (size_t i = 0; i < result->logits.size(); ++i) {
        ASSERT_EQ(result->logits[i].size(), 1280u);
        EXPECT_EQ(greedy_token(result->logits[i].data(), 1280), result->tokens[i]) << "step " << i;
      }
      if (reference.empty()) {
        reference = result->tokens;
        reference_logits = result->logits;
        continue;
      }
      EXPECT_EQ(result->tokens, reference);
      for (size_t i = 0; i < reference_logits.size(); ++i) {
        float amax = 0.0f;
        for (float v : reference_logits[i]) amax = std::max(amax, std::fabs(v));
        ASSERT_GT(amax, 0.0f) << "step " << i << ": all-zero logits compare trivially";
        for (size_t v = 0; v < 1280; ++v)
          ASSERT_NEAR(result->logits[i][v], reference_logits[i][v], 1e-3 * amax) << "step " << i << " id " << v;
      }
    }
  }
}

TEST(Generate, AllLogitsKeepsEveryPromptRow) {
  test::TempDir dir("all");
  test::write_programs(dir.path(), test::tiny_pack("release"), 2, test::small_settings());
  GenerateOptions o = options_for(dir.path(), 3, 4);
  auto last_only = generate(o);
  ASSERT_TRUE(last_only.is_ok()) << last_only.status().message();
  o.all_logits = true;
  auto all = generate(o);
  ASSERT_TRUE(all.is_ok()) << all.status().message();
  EXPECT_EQ(all->tokens, last_only->tokens);
  ASSERT_EQ(all->logits.size(), kPrompt.size() + 2) << "every prompt row, then 2 decode steps";
  EXPECT_EQ(all->logits[kPrompt.size() - 1], last_only->logits[0]);
  EXPECT_EQ(all->logits.back(), last_only->logits.back());

  o.max_tokens = 0;  // prefill only: no tokens, the prompt's logits
  auto none = generate(o);
  ASSERT_TRUE(none.is_ok()) << none.status().message();
  EXPECT_TRUE(none->tokens.empty());
  EXPECT_EQ(none->logits.size(), kPrompt.size());
}

// The config's eos_token_id ends generation: a folder whose config names the second generated token
// as eos (the shards are the same files, so the tokens before it are the same).
TEST(Generate, StopsAtTheConfigsEos) {
  test::TempDir dir("eos");
  const test::fs::path& pack = test::tiny_pack("release");
  test::write_programs(dir / "plain", pack, 1, test::small_settings());
  auto free_run = generate(options_for(dir / "plain", 6, 0));
  ASSERT_TRUE(free_run.is_ok()) << free_run.status().message();
  const int32_t eos = free_run->tokens[1];

  const test::fs::path model = dir / "model";
  test::fs::create_directories(model);
  for (const auto& entry : test::fs::directory_iterator(pack))
    if (entry.path().filename() != "config.json") test::fs::create_symlink(entry.path(), model / entry.path().filename());
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(test::read_file(pack / "config.json"));
  (config.contains("text_config") ? config["text_config"] : config)["eos_token_id"] = eos;
  test::write_file(model / "config.json", config.dump(2));
  test::write_programs(dir / "eos", model, 1, test::small_settings());

  GenerateOptions o = options_for(dir / "eos", 6, 0);
  o.model_dir = model.string();
  o.stop_at_eos = true;
  auto stopped = generate(o);
  ASSERT_TRUE(stopped.is_ok()) << stopped.status().message();
  const size_t first_eos = std::find(free_run->tokens.begin(), free_run->tokens.end(), eos) - free_run->tokens.begin();
  EXPECT_EQ(stopped->tokens, std::vector<int32_t>(free_run->tokens.begin(), free_run->tokens.begin() + first_eos + 1));
  o.stop_at_eos = false;
  auto ignored = generate(o);
  ASSERT_TRUE(ignored.is_ok()) << ignored.status().message();
  EXPECT_EQ(ignored->tokens, free_run->tokens);
}

std::string refusal(const GenerateOptions& o) {
  auto result = generate(o);
  return result.is_ok() ? std::string("(accepted)") : result.status().message();
}

TEST(Generate, RefusesBadRequests) {
  test::TempDir dir("requests");
  test::write_programs(dir.path(), test::tiny_pack("release"), 2, test::small_settings());
  GenerateOptions o = options_for(dir.path(), 4, 0);
  o.prompt.clear();
  EXPECT_EQ(refusal(o), "prompt: empty; give at least one token id");
  o.prompt = {5, 1280};
  EXPECT_EQ(refusal(o), "prompt[1]: token id 1280 outside the vocabulary 0..1279 (vocab_size 1280)");
  o.prompt = kPrompt;
  o.max_tokens = 54;  // 11 + 54 = 65 > 64
  EXPECT_NE(refusal(o).find("prompt of 11 tokens + max tokens 54 = 65 positions exceeds the planned context 64"),
            std::string::npos);
  o.max_tokens = 4;
  o.segment_rows = 3;
  EXPECT_NE(refusal(o).find("segment rows 3: not a planned prefill size of"), std::string::npos);
  EXPECT_NE(refusal(o).find("(planned: 8, 4;"), std::string::npos);
  o.segment_rows = 0;
  o.model_dir = test::tiny_pack("bf16").string();
  EXPECT_NE(refusal(o).find("differs from the program's pack_digest"), std::string::npos);
}

TEST(Generate, RefusesProgramFoldersThatAreNotOneWorld) {
  test::TempDir dir("folders");
  const test::fs::path& pack = test::tiny_pack("release");
  const ServingSettings settings = test::small_settings();
  GenerateOptions o = options_for(dir / "w2", 4, 0);
  test::fs::create_directories(dir / "w2");
  EXPECT_NE(refusal(o).find("no rank*.fb programs"), std::string::npos) << refusal(o);

  test::write_programs(dir / "w2", pack, 2, settings);
  test::fs::remove(dir / "w2" / "rank1.fb");
  EXPECT_NE(refusal(o).find("rank1.fb: missing; rank0.fb is of world 2"), std::string::npos) << refusal(o);

  test::write_programs(dir / "w3", pack, 3, settings);
  test::fs::copy_file(dir / "w3" / "rank1.fb", dir / "w2" / "rank1.fb");
  EXPECT_NE(refusal(o).find("rank1.fb: world 3, but rank0.fb has world 2"), std::string::npos) << refusal(o);

  ServingSettings longer = settings;
  longer.context = 128;
  test::write_programs(dir / "long", pack, 2, longer);
  test::fs::copy_file(dir / "long" / "rank1.fb", dir / "w2" / "rank1.fb", test::fs::copy_options::overwrite_existing);
  EXPECT_NE(refusal(o).find("rank1.fb: agreement_digest "), std::string::npos) << refusal(o);
  EXPECT_NE(refusal(o).find(", but rank0.fb has "), std::string::npos) << refusal(o);

  test::fs::copy_file(dir / "w3" / "rank2.fb", dir / "w2" / "rank2.fb");
  EXPECT_NE(refusal(o).find("rank2.fb: rank 2 is outside world 2 of rank0.fb"), std::string::npos) << refusal(o);
}

TEST(Generate, GreedyTokenTakesTheLowerIdOnTies) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, NAN};
  EXPECT_EQ(greedy_token(logits.data(), 5), 1);
  const std::vector<float> leading_nan = {NAN, -3.0f, -2.0f};
  EXPECT_EQ(greedy_token(leading_nan.data(), 3), 2);
}

}  // namespace
}  // namespace dsv41
