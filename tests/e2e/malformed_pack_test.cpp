// tests/e2e/malformed_pack_test.cpp — each malformed pack or config makes `dsv41c plan` exit 1 naming the culprit (tensor or field, and shard).
#include <gtest/gtest.h>

#include "tests/support/pack_editor.h"

namespace dsv41 {
namespace {
using test::PackEditor;
using test::TempDir;
using Parts = std::vector<std::string>;

constexpr const char* kIndex = "model.safetensors.index.json";

// The entry of `shard` whose data comes last.
std::string last_tensor(PackEditor& e, const std::string& shard) {
  std::string last;
  uint64_t begin = 0;
  for (auto& [name, entry] : e.header(shard).items())
    if (name != "__metadata__" && entry["data_offsets"][0].get<uint64_t>() >= begin) {
      begin = entry["data_offsets"][0].get<uint64_t>();
      last = name;
    }
  return last;
}

void shift_last(PackEditor& e, const std::string& shard, int64_t by) {
  auto& offsets = e.entry(last_tensor(e, shard))["data_offsets"];
  offsets = {offsets[0].get<int64_t>() + by, offsets[1].get<int64_t>() + by};
}

// One malformation of a header-only dsv41-tiny pack in two shards (so it has an index). `edit` makes
// it, saves the files, and returns what stderr must name.
struct Mode {
  const char* name;
  const char* format;
  Parts (*edit)(PackEditor&);
};

std::ostream& operator<<(std::ostream& out, const Mode& m) { return out << m.name; }

const Mode kModes[] = {
    {"header_length_past_the_file", "bf16",
     [](PackEditor& e) {
       const auto file = e.dir() / e.shard_files()[1];
       std::string bytes = test::read_file(file);
       const uint64_t length = bytes.size();  // 8 more than what follows the length field
       for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(length >> (8 * i));
       test::write_file(file, bytes);
       return Parts{e.shard_files()[1], "header length " + std::to_string(length), "exceeds the file"};
     }},
    {"header_not_json", "bf16",
     [](PackEditor& e) {
       test::write_safetensors(e.dir() / e.shard_files()[0], "{\"embed.weight\": {\"dtype\": \"BF16\",");
       return Parts{e.shard_files()[0] + ": header is not valid JSON"};
     }},
    {"truncated_shard", "bf16",
     [](PackEditor& e) {
       test::write_file(e.dir() / e.shard_files()[1], "abc");
       return Parts{e.shard_files()[1], "file of 3 bytes is too short"};
     }},
    {"unknown_dtype", "bf16",
     [](PackEditor& e) {
       e.entry("layers.1.attn.wkv.weight")["dtype"] = "Q4";
       e.save();
       return Parts{e.shard_of("layers.1.attn.wkv.weight") + ": layers.1.attn.wkv.weight: dtype \"Q4\" is not supported"};
     }},
    {"offsets_gap", "bf16",
     [](PackEditor& e) {
       const std::string shard = e.shard_files()[0], last = last_tensor(e, shard);
       shift_last(e, shard, 2);
       e.save();
       return Parts{shard + ": " + last + ": data_offsets begin at", "(a gap after the previous tensor)"};
     }},
    {"offsets_overlap", "bf16",
     [](PackEditor& e) {
       const std::string shard = e.shard_files()[1], last = last_tensor(e, shard);
       shift_last(e, shard, -2);
       e.save();
       return Parts{shard + ": " + last + ": data_offsets begin at", "(overlapping the previous tensor)"};
     }},
    {"bytes_not_dtype_times_shape", "bf16",
     [](PackEditor& e) {
       e.entry("layers.2.attn.kv_norm.weight")["shape"] = {63};
       e.save();
       return Parts{e.shard_of("layers.2.attn.kv_norm.weight") + ": layers.2.attn.kv_norm.weight: data_offsets",
                    "hold 128 bytes, expected 126 for BF16 [63]"};
     }},
    {"wrong_shape", "bf16",
     [](PackEditor& e) {
       e.entry("layers.3.attn.wq_b.weight")["shape"] = {512, 192};  // same bytes, so the header is valid
       e.save();
       return Parts{e.shard_of("layers.3.attn.wq_b.weight") +
                    ": layers.3.attn.wq_b.weight: shape [512, 192], expected [1024, 96]"};
     }},
    {"wrong_dtype", "bf16",
     [](PackEditor& e) {
       e.entry("layers.0.attn_norm.weight")["dtype"] = "F16";
       e.save();
       return Parts{e.shard_of("layers.0.attn_norm.weight") + ": layers.0.attn_norm.weight: dtype F16, expected BF16 [256]"};
     }},
    {"missing_tensor", "bf16",
     [](PackEditor& e) {
       e.remove_tensor("layers.3.attn.q_norm.weight");
       e.save();
       return Parts{"layers.3.attn.q_norm.weight: missing from the pack, expected BF16 [96]"};
     }},
    {"missing_scale", "release",
     [](PackEditor& e) {
       e.remove_tensor("layers.6.ffn.experts.9.w2.scale");
       e.save();
       return Parts{"layers.6.ffn.experts.9.w2.scale: missing from the pack",
                    "the I8 weight layers.6.ffn.experts.9.w2.weight needs it (F8_E8M0 [256, 20])"};
     }},
    {"unknown_tensor", "bf16",
     [](PackEditor& e) {
       e.add_tensor(e.shard_files()[1], "foo.bar", "F32", {4});
       e.save();
       return Parts{e.shard_files()[1] + ": foo.bar: tensor is not used by the plan and not on the ignore list"};
     }},
    {"index_places_tensor_in_wrong_shard", "bf16",
     [](PackEditor& e) {
       const std::string home = e.shard_of("embed.weight"), other = e.shard_files()[home == e.shard_files()[0]];
       e.weight_map()["embed.weight"] = other;
       e.save();
       return Parts{home + ": embed.weight: " + kIndex + " places it in " + other};
     }},
    {"index_lists_absent_tensor", "bf16",
     [](PackEditor& e) {
       e.weight_map()["layers.0.ghost.weight"] = e.shard_files()[0];
       e.save();
       return Parts{std::string(kIndex) + ": layers.0.ghost.weight: listed in " + e.shard_files()[0] +
                    " but that shard's header lacks it"};
     }},
    {"shard_tensor_missing_from_index", "bf16",
     [](PackEditor& e) {
       e.weight_map().erase("norm.weight");
       e.save();
       return Parts{e.shard_of("norm.weight") + ": norm.weight: tensor is not listed in " + kIndex};
     }},
    {"duplicate_tensor_across_shards", "bf16",
     [](PackEditor& e) {
       e.add_tensor(e.shard_files()[1], "embed.weight", "BF16", {1280, 256}, false);
       e.save();
       return Parts{e.shard_files()[1] + ": embed.weight: tensor name also appears in " + e.shard_files()[0]};
     }},
    {"index_not_json", "bf16",
     [](PackEditor& e) {
       test::write_file(e.dir() / kIndex, "{\"weight_map\": {");
       return Parts{kIndex, "not a JSON object"};
     }},
    {"shard_file_missing", "bf16",
     [](PackEditor& e) {
       test::fs::remove(e.dir() / e.shard_files()[1]);
       return Parts{e.shard_files()[1] + ": cannot open"};
     }},
    {"config_heads_not_divisible", "bf16",
     [](PackEditor& e) {
       e.text_config()["o_groups"] = 3;
       e.save();
       return Parts{"config.json: num_attention_heads: value 16 is not divisible by o_groups 3"};
     }},
    {"config_width_not_whole_blocks", "bf16",
     [](PackEditor& e) {
       e.text_config()["moe_intermediate_size"] = 600;
       e.save();
       return Parts{"moe_intermediate_size: value 600 is not a whole number of 128-column blocks"};
     }},
    {"config_kv_source_not_compressed", "bf16",
     [](PackEditor& e) {
       e.text_config()["kv_source_layer_ids"] = {1, 5};
       e.save();
       return Parts{"kv_source_layer_ids[0]: layer 1 has compress_ratios[1] = 0; a kv source must be a compressed layer"};
     }},
    {"config_field_wrong_type", "bf16",
     [](PackEditor& e) {
       e.text_config()["hidden_size"] = "256";
       e.save();
       return Parts{"hidden_size: value \"256\", expected an integer"};
     }},
    {"config_field_missing", "bf16",
     [](PackEditor& e) {
       e.text_config().erase("vocab_size");
       e.save();
       return Parts{"vocab_size: missing (required field)"};
     }},
    {"config_not_json", "bf16",
     [](PackEditor& e) {
       test::write_file(e.dir() / "config.json", "{\"text_config\": ");
       return Parts{"config.json: not valid JSON"};
     }},
    {"config_missing", "bf16",
     [](PackEditor& e) {
       test::fs::remove(e.dir() / "config.json");
       return Parts{"config.json: cannot open"};
     }},
    {"config_disagrees_with_pack", "bf16",
     [](PackEditor& e) {
       e.text_config()["n_routed_experts"] = 15;
       e.save();
       return Parts{e.shard_of("layers.0.ffn.gate.weight") +
                    ": layers.0.ffn.gate.weight: shape [16, 256], expected [15, 256]"};
     }},
};

class MalformedPack : public ::testing::TestWithParam<Mode> {};

TEST_P(MalformedPack, PlanExitsOneNamingTheCulprit) {
  const Mode& mode = GetParam();
  TempDir dir;
  test::make_pack(dir / "pack", "dsv41-tiny", mode.format, 2);
  PackEditor editor(dir / "pack");
  ASSERT_EQ(editor.shard_files().size(), 2u);
  const Parts parts = mode.edit(editor);
  const auto r = test::run_dsv41c({"plan", (dir / "pack").string(), "--world", "1", "--context", "4096", "--out",
                                   (dir / "out").string()});
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  EXPECT_EQ(r.err.rfind("dsv41c: error: ", 0), 0u) << r.describe();
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line\n" << r.describe();
  for (const auto& part : parts) EXPECT_NE(r.err.find(part), std::string::npos) << "\"" << part << "\"\n" << r.describe();
  EXPECT_FALSE(test::fs::exists(dir / "out" / "rank0.fb"));
}

INSTANTIATE_TEST_SUITE_P(Modes, MalformedPack, ::testing::ValuesIn(kModes),
                         [](const auto& info) { return std::string(info.param.name); });

// Tensors of other modalities are on the ignore list: planned around, not refused.
TEST(MalformedPackIgnored, IgnoreListTensorsAreAccepted) {
  TempDir dir;
  test::make_pack(dir / "pack", "dsv41-tiny", "bf16", 2);
  PackEditor editor(dir / "pack");
  editor.add_tensor(editor.shard_files()[0], "vision.x.weight", "BF16", {4, 4});
  editor.add_tensor(editor.shard_files()[1], "aligner.proj.weight", "F32", {2});
  editor.add_tensor(editor.shard_files()[1], "layers.0.attn.bias_vl", "BF16", {8});
  editor.save();
  const auto r = test::run_dsv41c({"plan", (dir / "pack").string(), "--world", "2", "--context", "4096", "--out",
                                   (dir / "out").string(), "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_TRUE(test::fs::exists(dir / "out" / "rank1.fb"));
}

}  // namespace
}  // namespace dsv41
