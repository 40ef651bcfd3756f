// tests/common/pack_index_test.cpp — safetensors headers read and checked: entries, offsets, shards, index agreement, refusals by name.
#include "common/pack_index.h"

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace dsv41 {
namespace {
using test::ordered_json;
using test::tensor_entry;
using test::TempDir;

// Two tensors laid out contiguously: a BF16 [2, 3] (12 bytes) and an F32 [4] (16 bytes).
ordered_json two_tensors() {
  ordered_json h;
  h["__metadata__"] = {{"format", "pt"}};
  h["a.weight"] = tensor_entry("BF16", {2, 3}, 0, 12);
  h["b.bias"] = tensor_entry("F32", {4}, 12, 28);
  return h;
}

std::string refusal(const test::fs::path& dir) {
  auto pack = PackIndex::open(dir.string());
  if (pack.is_ok()) return "(accepted)";
  return pack.status().message();
}

std::string header_refusal(const ordered_json& header) {
  std::vector<TensorEntry> entries;
  uint64_t bytes = 0;
  const Status s = parse_safetensors_header(header.dump(), "shard.safetensors", 0, entries, bytes);
  return s.is_ok() ? "(accepted)" : s.message();
}

TEST(PackIndex, ReadsEntriesOfOneShard) {
  TempDir dir;
  const std::string header = two_tensors().dump();
  test::write_safetensors(dir / "model.safetensors", header, std::string(28, '\x5a'));
  auto pack = PackIndex::open(dir.path().string());
  ASSERT_TRUE(pack.is_ok()) << pack.status().message();
  ASSERT_EQ(pack->tensors().size(), 2u);
  ASSERT_EQ(pack->shards().size(), 1u);
  const ShardInfo& shard = pack->shards()[0];
  EXPECT_EQ(shard.file_name, "model.safetensors");
  EXPECT_EQ(shard.header_length, header.size());
  EXPECT_EQ(shard.data_start(), 8 + header.size());
  EXPECT_EQ(shard.data_bytes, 28u);
  const TensorEntry* a = pack->find("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, DType::BF16);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->numel(), 6);
  EXPECT_EQ(a->bytes(), 12u);
  const TensorEntry* b = pack->find("b.bias");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->data_begin, 12u);
  EXPECT_EQ(b->dtype, DType::F32);
  EXPECT_EQ(pack->find("__metadata__"), nullptr);
  EXPECT_EQ(pack->find("c"), nullptr);
  EXPECT_EQ(pack->total_data_bytes(), 28u);
  EXPECT_TRUE(pack->check_data_present().is_ok());
}

TEST(PackIndex, HeaderOnlyShardOpensButHasNoData) {
  TempDir dir;
  test::write_safetensors(dir / "model.safetensors", two_tensors().dump());
  auto pack = PackIndex::open(dir.path().string());
  ASSERT_TRUE(pack.is_ok()) << pack.status().message();
  const Status s = pack->check_data_present();
  ASSERT_FALSE(s.is_ok());
  const uint64_t size = 8 + two_tensors().dump().size();
  EXPECT_EQ(s.message(), "model.safetensors: file has " + std::to_string(size) + " bytes, its header describes " +
                             std::to_string(size + 28) + " (a header-only or truncated shard)");
}

TEST(PackIndex, DigestIsStableAndFollowsTheHeader) {
  TempDir dir;
  test::write_safetensors(dir / "model.safetensors", two_tensors().dump());
  auto a = PackIndex::open(dir.path().string()), b = PackIndex::open(dir.path().string());
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->digest(), b->digest());
  ordered_json changed = two_tensors();
  changed["a.weight"]["shape"] = {3, 2};
  test::write_safetensors(dir / "model.safetensors", changed.dump());
  auto c = PackIndex::open(dir.path().string());
  ASSERT_TRUE(c.is_ok());
  EXPECT_NE(a->digest(), c->digest());
}

TEST(PackIndex, FileLevelRefusalsNameTheShard) {
  TempDir dir;
  const auto file = dir / "model.safetensors";
  test::write_file(file, "abc");
  EXPECT_EQ(refusal(dir.path()), file.string() + ": file of 3 bytes is too short for a safetensors header length (8 bytes)");
  // A length one byte past the end of the file.
  const std::string header = two_tensors().dump();
  std::string bytes(8, '\0');
  const uint64_t length = header.size() + 1;
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(length >> (8 * i));
  test::write_file(file, bytes + header);
  EXPECT_EQ(refusal(dir.path()), file.string() + ": header length " + std::to_string(length) + " exceeds the file (" +
                                      std::to_string(header.size()) + " bytes after the length) or the limit 104857600");
  test::write_safetensors(file, "{\"a\": [1, 2");
  EXPECT_EQ(refusal(dir.path()), "model.safetensors: header is not valid JSON");
  test::write_safetensors(file, "[1]");
  EXPECT_EQ(refusal(dir.path()), "model.safetensors: header is array, expected a JSON object");
}

TEST(PackIndex, FolderRefusals) {
  TempDir dir;
  EXPECT_EQ(refusal(dir.path()), dir.path().string() + ": no *.safetensors files");
  EXPECT_EQ(refusal(dir / "absent"), (dir / "absent").string() + ": not a folder");
}

// Each malformed entry names the shard, the tensor, the value and what was expected.
TEST(PackIndex, EntryRefusalsNameShardTensorAndValue) {
  struct Case {
    const char* what;
    void (*edit)(ordered_json&);
    const char* message;
  };
  const std::vector<Case> cases = {
      {"unknown dtype", [](ordered_json& h) { h["a.weight"]["dtype"] = "Q4"; },
       "shard.safetensors: a.weight: dtype \"Q4\" is not supported (supported: BF16, F16, F32, F8_E4M3, F8_E8M0, I8, "
       "I16, I32, I64, U8)"},
      {"dtype missing", [](ordered_json& h) { h["a.weight"].erase("dtype"); },
       "shard.safetensors: a.weight: dtype missing or not a string"},
      {"entry not object", [](ordered_json& h) { h["a.weight"] = 7; },
       "shard.safetensors: a.weight: entry is number, expected an object"},
      {"negative shape", [](ordered_json& h) { h["a.weight"]["shape"] = {2, -3}; },
       "shard.safetensors: a.weight: shape [2,-3] has an entry that is not a non-negative integer"},
      {"shape overflows", [](ordered_json& h) { h["a.weight"]["shape"] = {4294967296LL, 4294967296LL, 2}; },
       "shard.safetensors: a.weight: shape [4294967296, 4294967296, 2] of BF16 is too large (over 2^63 bytes)"},
      {"shape not list", [](ordered_json& h) { h["a.weight"]["shape"] = "2x3"; },
       "shard.safetensors: a.weight: shape missing or not a list"},
      {"three offsets", [](ordered_json& h) { h["b.bias"]["data_offsets"] = {12, 28, 30}; },
       "shard.safetensors: b.bias: data_offsets must be two non-negative integers"},
      {"negative offset", [](ordered_json& h) { h["b.bias"]["data_offsets"] = {-4, 12}; },
       "shard.safetensors: b.bias: data_offsets must be two non-negative integers"},
      {"end before begin", [](ordered_json& h) { h["b.bias"]["data_offsets"] = {28, 12}; },
       "shard.safetensors: b.bias: data_offsets [28, 12] end before they begin"},
      {"bytes vs shape", [](ordered_json& h) { h["a.weight"]["shape"] = {2, 4}; },
       "shard.safetensors: a.weight: data_offsets [0, 12] hold 12 bytes, expected 16 for BF16 [2, 4]"},
      {"gap", [](ordered_json& h) { h["b.bias"]["data_offsets"] = {14, 30}; },
       "shard.safetensors: b.bias: data_offsets begin at 14, expected 12 (a gap after the previous tensor)"},
      {"overlap", [](ordered_json& h) { h["b.bias"]["data_offsets"] = {8, 24}; },
       "shard.safetensors: b.bias: data_offsets begin at 8, expected 12 (overlapping the previous tensor)"},
      {"leading gap", [](ordered_json& h) { h["a.weight"]["data_offsets"] = {4, 16}; h["b.bias"]["data_offsets"] = {16, 32}; },
       "shard.safetensors: a.weight: data_offsets begin at 4, expected 0 (a gap after the previous tensor)"},
  };
  for (const Case& c : cases) {
    ordered_json header = two_tensors();
    c.edit(header);
    EXPECT_EQ(header_refusal(header), c.message) << c.what;
  }
}

TEST(PackIndex, EmptyTensorsAndMetadataOnlyHeadersAreAccepted) {
  ordered_json header = two_tensors();
  header["empty"] = tensor_entry("F32", {0, 5}, 28, 28);
  EXPECT_EQ(header_refusal(header), "(accepted)");
  EXPECT_EQ(header_refusal(ordered_json{{"__metadata__", {{"format", "pt"}}}}), "(accepted)");
}

// Two shards described by an index: (tensor -> shard) must agree both ways.
class IndexedPack : public ::testing::Test {
 protected:
  void SetUp() override {
    ordered_json first, second;
    first["a.weight"] = tensor_entry("BF16", {2, 3}, 0, 12);
    second["b.bias"] = tensor_entry("F32", {4}, 0, 16);
    second["c.weight"] = tensor_entry("U8", {8}, 16, 24);
    shards_ = {first, second};
    map_ = {{"a.weight", kFirst}, {"b.bias", kSecond}, {"c.weight", kSecond}};
  }
  std::string open() {
    test::write_safetensors(dir_ / kFirst, shards_[0].dump());
    test::write_safetensors(dir_ / kSecond, shards_[1].dump());
    test::write_file(dir_ / "model.safetensors.index.json", ordered_json{{"weight_map", map_}}.dump());
    return refusal(dir_.path());
  }
  static constexpr const char* kFirst = "model-00001-of-00002.safetensors";
  static constexpr const char* kSecond = "model-00002-of-00002.safetensors";
  TempDir dir_;
  std::vector<ordered_json> shards_;
  ordered_json map_;
};

TEST_F(IndexedPack, AgreeingIndexOpens) {
  ASSERT_EQ(open(), "(accepted)");
  auto pack = PackIndex::open(dir_.path().string());
  ASSERT_TRUE(pack.is_ok());
  EXPECT_EQ(pack->shards().size(), 2u);
  EXPECT_EQ(pack->find("c.weight")->shard, 1);
  EXPECT_EQ(pack->total_data_bytes(), 12u + 24u);
}

TEST_F(IndexedPack, TensorInTheWrongShard) {
  map_["c.weight"] = kFirst;
  EXPECT_EQ(open(), std::string(kSecond) + ": c.weight: model.safetensors.index.json places it in " + kFirst);
}

TEST_F(IndexedPack, IndexListsATensorNoShardHas) {
  map_["d.weight"] = kSecond;
  EXPECT_EQ(open(), std::string("model.safetensors.index.json: d.weight: listed in ") + kSecond +
                        " but that shard's header lacks it");
}

TEST_F(IndexedPack, ShardTensorMissingFromTheIndex) {
  map_.erase("b.bias");
  EXPECT_EQ(open(), std::string(kSecond) + ": b.bias: tensor is not listed in model.safetensors.index.json");
}

TEST_F(IndexedPack, DuplicateTensorAcrossShards) {
  shards_[1]["a.weight"] = tensor_entry("BF16", {2, 3}, 24, 36);
  EXPECT_EQ(open(), std::string(kSecond) + ": a.weight: tensor name also appears in " + kFirst);
}

TEST_F(IndexedPack, IndexNamesAShardFileThatIsMissing) {
  map_["e.weight"] = "model-00003-of-00002.safetensors";
  EXPECT_EQ(open(), (dir_ / "model-00003-of-00002.safetensors").string() + ": cannot open");
}

TEST_F(IndexedPack, MalformedIndexFiles) {
  ASSERT_EQ(open(), "(accepted)");
  const auto index = dir_ / "model.safetensors.index.json";
  test::write_file(index, "{\"weight_map\": ");
  EXPECT_EQ(refusal(dir_.path()), index.string() + ": not a JSON object");
  test::write_file(index, "{\"metadata\": {}}");
  EXPECT_EQ(refusal(dir_.path()),
            index.string() + ": weight_map: missing, expected an object of tensor name -> shard file");
  test::write_file(index, "{\"weight_map\": {\"a.weight\": 3}}");
  EXPECT_EQ(refusal(dir_.path()), index.string() + ": weight_map.a.weight: value 3, expected a shard file name");
  test::write_file(index, "{\"weight_map\": {}}");
  EXPECT_EQ(refusal(dir_.path()), index.string() + ": weight_map is empty");
}

// Without an index every *.safetensors file is a shard, in name order.
TEST(PackIndex, UnindexedShardsAreReadInNameOrder) {
  TempDir dir;
  ordered_json b, a;
  b["x"] = tensor_entry("U8", {4}, 0, 4);
  a["y"] = tensor_entry("U8", {2}, 0, 2);
  test::write_safetensors(dir / "b.safetensors", b.dump());
  test::write_safetensors(dir / "a.safetensors", a.dump());
  test::write_file(dir / "notes.txt", "not a shard");
  auto pack = PackIndex::open(dir.path().string());
  ASSERT_TRUE(pack.is_ok()) << pack.status().message();
  ASSERT_EQ(pack->shards().size(), 2u);
  EXPECT_EQ(pack->shards()[0].file_name, "a.safetensors");
  EXPECT_EQ(pack->find("x")->shard, 1);
  EXPECT_EQ(pack->find("y")->shard, 0);
}

}  // namespace
}  // namespace dsv41
