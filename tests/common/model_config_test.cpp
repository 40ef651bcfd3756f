// tests/common/model_config_test.cpp — config.json parsing, derived constants and layer roles, refusals naming field, value and rule.
#include "common/model_config.h"

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace dsv41 {
namespace {
using test::ordered_json;

ordered_json fixture_json(const std::string& fixture) {
  return ordered_json::parse(test::read_file(test::fixture_config_path(fixture)));
}

Result<ModelConfig> parse(const ordered_json& json) { return parse_model_config(json.dump(), "config.json"); }

TEST(ModelConfig, ReleaseDerivesConstants) {
  const ModelConfig c = test::fixture_config("dsv41-release");
  EXPECT_EQ(c.vocab_size, 129280);
  EXPECT_EQ(c.hidden_size, 5120);
  EXPECT_EQ(c.num_hidden_layers, 40);
  EXPECT_EQ(c.heads_per_group, 8);
  EXPECT_EQ(c.group_width, 4096);
  EXPECT_EQ(c.nope_head_dim, 448);
  EXPECT_EQ(c.mix_hc, 24);
  EXPECT_EQ(c.hc_dim, 20480);
  EXPECT_EQ(c.expert_blocks, 18);
  EXPECT_EQ(c.vocab_blocks, 1010);
  EXPECT_EQ(c.engram_columns, 24);
  EXPECT_TRUE(c.has_engram());
  EXPECT_TRUE(c.has_dspark());
  EXPECT_EQ(c.engram_index(14), 1);
  EXPECT_EQ(c.engram_index(13), -1);
  EXPECT_EQ(c.rope_scaling.type, "yarn");
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 65536);
  ASSERT_EQ(c.layers.size(), 40u);
}

// Roles come from the config's lists alone: sources, the layers that read them, candidate masking.
TEST(ModelConfig, ReleaseLayerRoles) {
  const ModelConfig c = test::fixture_config("dsv41-release");
  const auto& L = c.layers;
  EXPECT_EQ(L[0].ratio, 0);
  EXPECT_EQ(L[0].kv_layer, -1);
  EXPECT_EQ(L[0].index_layer, -1);
  EXPECT_TRUE(L[1].engram);
  EXPECT_TRUE(L[2].kv_source && L[2].index_source);
  EXPECT_EQ(L[2].kv_layer, 2);
  EXPECT_EQ(L[7].kv_layer, 2);
  EXPECT_EQ(L[7].index_layer, 2);
  EXPECT_EQ(L[9].kv_layer, 8);
  EXPECT_TRUE(L[14].engram && L[14].kv_source);
  EXPECT_EQ(L[19].kv_layer, 14);
  EXPECT_TRUE(L[20].candidate_source);
  EXPECT_FALSE(L[20].candidate_masked);
  EXPECT_EQ(L[23].index_layer, 20);
  EXPECT_TRUE(L[24].index_source && L[24].candidate_masked);
  EXPECT_EQ(L[24].kv_layer, 20);
  EXPECT_EQ(L[39].index_layer, 36);
  EXPECT_EQ(L[39].ratio, 1);
}

TEST(ModelConfig, TinyAtTopLevelWithoutEngramOrDSparkIsValid) {
  const ModelConfig c = test::fixture_config("dsv41-tiny");
  EXPECT_FALSE(c.has_engram());
  EXPECT_FALSE(c.has_dspark());
  EXPECT_EQ(c.engram_columns, 0);
  EXPECT_EQ(c.heads_per_group, 2);
  EXPECT_EQ(c.expert_blocks, 5);
  EXPECT_TRUE(c.layers[5].candidate_source);
  EXPECT_TRUE(c.layers[7].candidate_masked);
  EXPECT_EQ(c.layers[6].index_layer, 5);
}

// The same text model nested under text_config or at top level is the same config.
TEST(ModelConfig, NestedAndTopLevelTextAreEquivalent) {
  const ordered_json release = fixture_json("dsv41-release");
  auto nested = parse(release), flat = parse(release["text_config"]);
  ASSERT_TRUE(nested.is_ok() && flat.is_ok()) << flat.status().message();
  EXPECT_EQ(config_digest(*nested), config_digest(*flat));
  const ordered_json tiny = fixture_json("dsv41-tiny");
  auto wrapped = parse(ordered_json{{"model_type", "x"}, {"text_config", tiny}});
  ASSERT_TRUE(wrapped.is_ok()) << wrapped.status().message();
  EXPECT_EQ(config_digest(*wrapped), config_digest(test::fixture_config("dsv41-tiny")));
}

TEST(ModelConfig, ReleaseWithoutEngramAndDSparkIsValid) {
  ordered_json json = fixture_json("dsv41-release");
  auto& t = json["text_config"];
  t["engram_layer_ids"] = ordered_json::array();
  t["num_nextn_predict_layers"] = 0;
  auto& ratios = t["compress_ratios"];
  ratios.erase(ratios.begin() + 40, ratios.end());
  auto c = parse(json);
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_FALSE(c->has_engram());
  EXPECT_FALSE(c->has_dspark());
  EXPECT_EQ(c->engram_columns, 0);
}

TEST(ModelConfig, DigestIsStableAndSeesEveryChange) {
  const ordered_json tiny = fixture_json("dsv41-tiny");
  auto a = parse(tiny), b = parse(tiny);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(config_digest(*a), config_digest(*b));
  for (const auto& [field, value] : std::vector<std::pair<std::string, ordered_json>>{
           {"index_topk", 9}, {"rope_theta", 10001.0}, {"index_source_layer_ids", {2, 5}}, {"norm_topk_prob", false}}) {
    ordered_json changed = tiny;
    changed[field] = value;
    auto c = parse(changed);
    ASSERT_TRUE(c.is_ok()) << field << ": " << c.status().message();
    EXPECT_NE(config_digest(*c), config_digest(*a)) << field;
  }
}

TEST(ModelConfig, LoadReadsAFolderOrAFile) {
  const auto dir = test::fixture_config_path("dsv41-tiny").parent_path();
  auto from_dir = load_model_config(dir.string());
  auto from_file = load_model_config(test::fixture_config_path("dsv41-tiny").string());
  ASSERT_TRUE(from_dir.is_ok() && from_file.is_ok());
  EXPECT_EQ(config_digest(*from_dir), config_digest(*from_file));
  test::TempDir empty;
  auto missing = load_model_config(empty.path().string());
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("config.json: cannot open"), std::string::npos) << missing.status().message();
}

TEST(ModelConfig, TextThatIsNotAnObjectIsRefused) {
  auto bad = parse_model_config("{\"vocab_size\": ", "cfg.json");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(), "cfg.json: not valid JSON");
  auto list = parse_model_config("[1, 2]", "cfg.json");
  ASSERT_FALSE(list.is_ok());
  EXPECT_EQ(list.status().message(), "cfg.json: top level is array, expected a JSON object");
}

// One field changed from a valid config; the refusal must name the field, its value and the rule.
struct Refusal {
  const char* fixture;
  const char* field;  // top-level key of the text config
  ordered_json value;
  const char* message;  // the expected message after "config.json: "
};

class ModelConfigRefusal : public ::testing::TestWithParam<Refusal> {};

TEST_P(ModelConfigRefusal, NamesFieldValueAndRule) {
  const Refusal& r = GetParam();
  ordered_json json = fixture_json(r.fixture);
  ordered_json& text = json.contains("text_config") ? json["text_config"] : json;
  if (r.value.is_null()) text.erase(r.field);
  else text[r.field] = r.value;
  auto config = parse(json);
  ASSERT_FALSE(config.is_ok()) << r.field << " = " << r.value.dump() << " was accepted";
  EXPECT_EQ(config.status().message(), std::string("config.json: ") + r.message);
}

const Refusal kRefusals[] = {
    {"dsv41-tiny", "o_groups", 3, "num_attention_heads: value 16 is not divisible by o_groups 3"},
    {"dsv41-release", "o_groups", 7, "text_config.num_attention_heads: value 64 is not divisible by o_groups 7"},
    {"dsv41-tiny", "moe_intermediate_size", 600,
     "moe_intermediate_size: value 600 is not a whole number of 128-column blocks (experts split by blocks)"},
    {"dsv41-release", "vocab_size", 129000,
     "text_config.vocab_size: value 129000 is not a whole number of 128-column blocks (the vocabulary splits by blocks)"},
    {"dsv41-tiny", "hidden_size", 250,
     "hidden_size: value 250 is not a whole number of 32-column blocks (FP8/FP4 scales cover 32 inputs)"},
    {"dsv41-tiny", "kv_source_layer_ids", {0, 5},
     "kv_source_layer_ids[0]: layer 0 has compress_ratios[0] = 0; a kv source must be a compressed layer"},
    {"dsv41-release", "kv_source_layer_ids", {2, 8, 14, 20, 40},
     "text_config.kv_source_layer_ids[4]: layer 40 is outside 0..39"},
    {"dsv41-tiny", "index_source_layer_ids", {1, 2, 5},
     "index_source_layer_ids[0]: layer 1 has compress_ratios[1] = 0; an index source must be a compressed layer"},
    {"dsv41-tiny", "kv_source_layer_ids", {5, 2}, "kv_source_layer_ids: [5, 2] must be strictly ascending"},
    {"dsv41-tiny", "kv_source_layer_ids", {5},
     "kv_source_layer_ids: layer 2 (compress ratio 2) has no kv source of the same ratio at or before it"},
    {"dsv41-tiny", "num_key_value_heads", 2,
     "num_key_value_heads: value 2, must be 1 (one shared latent is both K and V)"},
    {"dsv41-tiny", "qk_rope_head_dim", 15, "qk_rope_head_dim: value 15, must be even, positive and at most head_dim 64"},
    {"dsv41-tiny", "head_dim", 40, "head_dim: value 40 times 2 heads a group is not a multiple of 32 (FP8 scale rows)"},
    {"dsv41-tiny", "num_experts_per_tok", 17, "num_experts_per_tok: value 17 exceeds n_routed_experts 16"},
    {"dsv41-tiny", "n_shared_experts", 2, "n_shared_experts: value 2, supported values are 0 and 1"},
    {"dsv41-tiny", "scoring_func", "softmax",
     "scoring_func: value \"softmax\", the only supported value is \"sqrtsoftplus\""},
    {"dsv41-tiny", "sliding_window", 0, "sliding_window: value 0, must be positive"},
    {"dsv41-tiny", "compress_ratios", {0, 0, 2, 2, 2, 1, 1},
     "compress_ratios: 7 entries, expected num_hidden_layers 8 (+ num_nextn_predict_layers 0)"},
    {"dsv41-tiny", "compress_ratios", {0, 0, 2, 4, 2, 1, 1, 1}, "compress_ratios[3]: value 4, must be 0, 1 or 2"},
    {"dsv41-tiny", "candidate_source_layer_id", 6,
     "candidate_source_layer_id: layer 6 is not an index source (index_source_layer_ids [2, 5, 7])"},
    {"dsv41-tiny", "index_head_dim", 8, "index_head_dim: value 8 is smaller than qk_rope_head_dim 16"},
    {"dsv41-tiny", "hidden_size", "256", "hidden_size: value \"256\", expected an integer"},
    {"dsv41-tiny", "rms_norm_eps", "small", "rms_norm_eps: value \"small\", expected a number"},
    {"dsv41-tiny", "kv_source_layer_ids", {2, "5"}, "kv_source_layer_ids: value [2,\"5\"], expected a list of integers"},
    {"dsv41-tiny", "vocab_size", nullptr, "vocab_size: missing (required field)"},
    {"dsv41-tiny", "engram_layer_ids", {3}, "engram_num_embeddings: missing (required field)"},
    {"dsv41-tiny", "num_nextn_predict_layers", 1, "dspark_block_size: missing (required field)"},
    {"dsv41-release", "num_nextn_predict_layers", 0,
     "text_config.compress_ratios: 43 entries, expected num_hidden_layers 40 (+ num_nextn_predict_layers 0)"},
    {"dsv41-release", "engram_num_embeddings", {384006168},
     "text_config.engram_num_embeddings: 1 entries, expected one per engram_layer_ids entry (2)"},
    {"dsv41-release", "engram_head_dim", 200,
     "text_config.engram_head_dim: value 200 is not a whole number of 32-column blocks (one scale per 32 values of a row)"},
    {"dsv41-release", "dspark_num_experts_per_tok", 129,
     "text_config.dspark_num_experts_per_tok: value 129 exceeds dspark_n_routed_experts 128"},
    {"dsv41-release", "dspark_target_layer_ids", {37, 36},
     "text_config.dspark_target_layer_ids: [37, 36] must be strictly ascending"},
    {"dsv41-release", "rope_scaling", {{"type", "linear"}, {"factor", 2}, {"original_max_position_embeddings", 4096}},
     "text_config.rope_scaling.type: value \"linear\", the only supported value is \"yarn\""},
    {"dsv41-release", "rope_scaling", {{"type", "yarn"}, {"original_max_position_embeddings", 4096}},
     "text_config.rope_scaling.factor: missing (required field)"},
};

INSTANTIATE_TEST_SUITE_P(Fields, ModelConfigRefusal, ::testing::ValuesIn(kRefusals), [](const auto& info) {
  return std::to_string(info.index) + "_" + info.param.field;
});

}  // namespace
}  // namespace dsv41
