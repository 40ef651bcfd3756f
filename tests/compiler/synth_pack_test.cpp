// tests/compiler/synth_pack_test.cpp — synth-pack writes complete, deterministic, correctly quantized packs.
#include "compiler/synth_pack.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/numeric_formats.h"
#include "common/pack_index.h"
#include "common/tensor_inventory.h"
#include "compiler/safetensors_writer.h"

namespace dsv41 {
namespace {
namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Fixture {
  ModelConfig config;
  std::string text;
};

const Fixture& fixture(const std::string& name) {
  static std::map<std::string, Fixture> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  const fs::path path = fs::path(DSV41_SOURCE_DIR) / "fixtures" / name / "config.json";
  Fixture f;
  f.text = read_text(path);
  auto config = parse_model_config(f.text, path.string());
  if (!config.is_ok()) ADD_FAILURE() << config.status().message();
  else f.config = std::move(config).value();
  return cache.emplace(name, std::move(f)).first->second;
}

// A fresh folder per test, so runs and concurrent test processes never see each other's files.
fs::path fresh_dir(const std::string& tag) {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(testing::TempDir()) /
                       fmt::format("dsv41_synth_{}_{}_{}", info->name(), tag, static_cast<long>(getpid()));
  fs::remove_all(dir);
  return dir;
}

PackIndex write_and_open(const std::string& fixture_name, SynthPackOptions options) {
  const Fixture& f = fixture(fixture_name);
  const Status written = write_synth_pack(f.config, f.text, options);
  EXPECT_TRUE(written.is_ok()) << written.message();
  auto pack = PackIndex::open(options.out_dir);
  EXPECT_TRUE(pack.is_ok()) << pack.status().message();
  return pack.is_ok() ? std::move(pack).value() : PackIndex();
}

Encoding release_encoding(StorageKind storage) {
  switch (storage) {
    case StorageKind::Plain: return Encoding::Plain;
    case StorageKind::Linear: return Encoding::FP8Block;
    case StorageKind::ExpertLinear: return Encoding::FP4Rows;
    case StorageKind::EmbedRows: return Encoding::FP8Rows;
  }
  return Encoding::Plain;
}

Encoding encoding_of(const ExpectedTensor& t, SynthFormat format) {
  if (t.storage == StorageKind::Plain) return Encoding::Plain;
  return format == SynthFormat::BF16 ? Encoding::BF16 : release_encoding(t.storage);
}

// Every stored form of every inventory tensor is present with its dtype and shape, and nothing else.
void expect_inventory(const PackIndex& pack, const ModelConfig& config, SynthFormat format) {
  size_t forms = 0;
  for (const ExpectedTensor& t : expected_tensors(config))
    for (const StoredForm& f : stored_forms(t, encoding_of(t, format))) {
      ++forms;
      const TensorEntry* e = pack.find(f.name);
      ASSERT_NE(e, nullptr) << f.name << " missing";
      EXPECT_EQ(e->dtype, f.dtype) << f.name;
      EXPECT_EQ(e->shape, f.shape) << f.name;
    }
  EXPECT_EQ(pack.tensors().size(), forms);
}

std::vector<uint8_t> tensor_bytes(const PackIndex& pack, const std::string& name) {
  const TensorEntry* e = pack.find(name);
  if (e == nullptr) {
    ADD_FAILURE() << name << " missing";
    return {};
  }
  const ShardInfo& shard = pack.shards()[e->shard];
  std::ifstream in(fs::path(pack.dir()) / shard.file_name, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(shard.data_start() + e->data_begin));
  std::vector<uint8_t> bytes(e->bytes());
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(in.good()) << name << ": short read";
  return bytes;
}

std::vector<float> dequantized(const PackIndex& pack, const ExpectedTensor& t, Encoding encoding) {
  const std::vector<uint8_t> weight = tensor_bytes(pack, t.name);
  const std::vector<uint8_t> scale =
      encoding == Encoding::Plain || encoding == Encoding::BF16 ? std::vector<uint8_t>{} : tensor_bytes(pack, scale_name(t.name));
  const int64_t cols = t.shape.back(), rows = t.shape.size() == 2 ? t.shape[0] : 1;
  std::vector<float> out(static_cast<size_t>(rows * cols));
  dequantize(encoding, t.plain_dtype, weight.data(), scale.data(), rows, cols, out.data());
  return out;
}

TEST(SafetensorsWriter, HeaderIsPaddedAndParses) {
  const std::vector<SafetensorsEntry> entries = {{"a\"b", DType::BF16, {3, 5}}, {"c", DType::F8_E8M0, {7}}};
  const std::string header = safetensors_header_json(entries);
  EXPECT_EQ(header.size() % 8, 0u) << header;
  std::vector<TensorEntry> parsed;
  uint64_t data_bytes = 0;
  const Status s = parse_safetensors_header(header, "test", 0, parsed, data_bytes);
  ASSERT_TRUE(s.is_ok()) << s.message();
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0].name, "a\"b");
  EXPECT_EQ(parsed[1].data_begin, 30u);
  EXPECT_EQ(data_bytes, 37u);
}

TEST(SynthPack, TinyBf16PackHoldsEveryTensor) {
  SynthPackOptions options;
  options.out_dir = fresh_dir("bf16").string();
  const PackIndex pack = write_and_open("dsv41-tiny", options);
  expect_inventory(pack, fixture("dsv41-tiny").config, SynthFormat::BF16);
  EXPECT_TRUE(pack.check_data_present().is_ok());
  EXPECT_EQ(read_text(fs::path(options.out_dir) / "config.json"), fixture("dsv41-tiny").text);
  fs::remove_all(options.out_dir);
}

TEST(SynthPack, TinyReleasePackHoldsEveryTensor) {
  SynthPackOptions options;
  options.out_dir = fresh_dir("release").string();
  options.format = SynthFormat::Release;
  const auto start = std::chrono::steady_clock::now();
  const PackIndex pack = write_and_open("dsv41-tiny", options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect_inventory(pack, fixture("dsv41-tiny").config, SynthFormat::Release);
  EXPECT_TRUE(pack.check_data_present().is_ok());
  EXPECT_LT(seconds, 5.0) << "tiny release pack of " << pack.total_data_bytes() << " bytes";
  fs::remove_all(options.out_dir);
}

TEST(SynthPack, ShardedPackOpensThroughIndexWithTheSameBytes) {
  SynthPackOptions options;
  options.out_dir = fresh_dir("one").string();
  options.format = SynthFormat::Release;
  const PackIndex single = write_and_open("dsv41-tiny", options);
  SynthPackOptions sharded = options;
  sharded.out_dir = fresh_dir("three").string();
  sharded.shards = 3;
  std::vector<std::string> progress;
  sharded.progress = [&](const std::string& line) { progress.push_back(line); };
  const PackIndex pack = write_and_open("dsv41-tiny", sharded);
  EXPECT_TRUE(fs::exists(fs::path(sharded.out_dir) / "model.safetensors.index.json"));
  ASSERT_EQ(pack.shards().size(), 3u);
  EXPECT_EQ(pack.shards()[2].file_name, "model-00003-of-00003.safetensors");
  EXPECT_EQ(progress.size(), 3u);
  expect_inventory(pack, fixture("dsv41-tiny").config, SynthFormat::Release);
  for (const ShardInfo& s : pack.shards())  // balanced by bytes: no shard above half the pack
    EXPECT_LT(s.data_bytes, pack.total_data_bytes() / 2) << s.file_name;
  for (const TensorEntry& t : single.tensors()) {
    const TensorEntry* e = pack.find(t.name);
    ASSERT_NE(e, nullptr) << t.name;
    if (t.dtype == DType::F8_E8M0) EXPECT_EQ(e->shard, pack.find(t.name.substr(0, t.name.size() - 5) + "weight")->shard) << t.name;
  }
  for (const char* name : {"embed.weight", "layers.3.ffn.experts.5.w2.weight", "layers.3.ffn.experts.5.w2.scale", "head.weight"})
    EXPECT_EQ(tensor_bytes(single, name), tensor_bytes(pack, name)) << name << ": bytes depend on sharding";
  // Rewriting the folder as one shard leaves one pack: the old shards and index go.
  sharded.shards = 1;
  const PackIndex rewritten = write_and_open("dsv41-tiny", sharded);
  EXPECT_EQ(rewritten.shards().size(), 1u);
  EXPECT_FALSE(fs::exists(fs::path(sharded.out_dir) / "model.safetensors.index.json"));
  fs::remove_all(options.out_dir);
  fs::remove_all(sharded.out_dir);
}

TEST(SynthPack, SameSeedSameBytesOtherSeedOtherBytes) {
  SynthPackOptions options;
  options.format = SynthFormat::Release;
  options.seed = 7;
  options.out_dir = fresh_dir("a").string();
  ASSERT_TRUE(write_synth_pack(fixture("dsv41-tiny").config, fixture("dsv41-tiny").text, options).is_ok());
  const fs::path a = fs::path(options.out_dir) / "model.safetensors";
  options.out_dir = fresh_dir("b").string();
  ASSERT_TRUE(write_synth_pack(fixture("dsv41-tiny").config, fixture("dsv41-tiny").text, options).is_ok());
  const fs::path b = fs::path(options.out_dir) / "model.safetensors";
  options.out_dir = fresh_dir("c").string();
  options.seed = 8;
  ASSERT_TRUE(write_synth_pack(fixture("dsv41-tiny").config, fixture("dsv41-tiny").text, options).is_ok());
  const fs::path c = fs::path(options.out_dir) / "model.safetensors";
  const std::string bytes_a = read_text(a);
  EXPECT_GT(bytes_a.size(), 1000u);
  EXPECT_TRUE(bytes_a == read_text(b)) << "two writes with seed 7 differ";
  const std::string bytes_c = read_text(c);
  EXPECT_EQ(bytes_a.size(), bytes_c.size());
  EXPECT_FALSE(bytes_a == bytes_c) << "seeds 7 and 8 give the same bytes";
  for (const fs::path& p : {a, b, c}) fs::remove_all(p.parent_path());
}

TEST(SynthPack, ReleaseHeadersOnlyPackIsFastAndDescribesTheWholeModel) {
  for (int shards : {1, 48}) {
    SynthPackOptions options;
    options.out_dir = fresh_dir(std::to_string(shards)).string();
    options.format = SynthFormat::Release;
    options.headers_only = true;
    options.shards = shards;
    const auto start = std::chrono::steady_clock::now();
    const Status s = write_synth_pack(fixture("dsv41-release").config, fixture("dsv41-release").text, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(s.is_ok()) << s.message();
    std::printf("release headers-only pack, %d shard(s): written in %.2f s\n", shards, seconds);
    EXPECT_LT(seconds, 3.0) << shards << " shards";
    auto pack = PackIndex::open(options.out_dir);
    ASSERT_TRUE(pack.is_ok()) << pack.status().message();
    EXPECT_EQ(pack->shards().size(), static_cast<size_t>(shards));
    for (const ShardInfo& shard : pack->shards())
      EXPECT_EQ(fs::file_size(fs::path(options.out_dir) / shard.file_name), 8 + shard.header_length) << shard.file_name;
    EXPECT_GT(static_cast<double>(pack->total_data_bytes()), 300e9);
    EXPECT_FALSE(pack->check_data_present().is_ok());
    expect_inventory(*pack, fixture("dsv41-release").config, SynthFormat::Release);
    fs::remove_all(options.out_dir);
  }
}

// The release encodings dequantize to the bf16 format's values: proves scales, tiles and nibble order.
TEST(SynthPack, ReleaseValuesDequantizeToTheBf16Values) {
  SynthPackOptions options;
  options.seed = 11;
  options.out_dir = fresh_dir("bf16").string();
  const PackIndex bf16 = write_and_open("dsv41-tiny", options);
  options.out_dir = fresh_dir("release").string();
  options.format = SynthFormat::Release;
  const PackIndex release = write_and_open("dsv41-tiny", options);
  std::map<Encoding, int> checked;
  for (const ExpectedTensor& t : expected_tensors(fixture("dsv41-tiny").config)) {
    const Encoding encoding = release_encoding(t.storage);
    if (encoding == Encoding::Plain) continue;
    if (encoding == Encoding::FP4Rows && checked[encoding] >= 4) continue;  // a few experts suffice
    const std::vector<float> want = dequantized(bf16, t, Encoding::BF16);
    const std::vector<float> got = dequantized(release, t, encoding);
    ASSERT_EQ(want.size(), got.size());
    double err = 0, norm = 0, amax = 0;
    for (float v : want) amax = std::max(amax, std::fabs(static_cast<double>(v)));
    // FP8 e4m3 keeps 3 mantissa bits: within 1/16 relative, plus subnormal steps near zero. FP4 e2m1
    // steps are up to a third of a group's amax.
    const bool fp4 = encoding == Encoding::FP4Rows;
    const double relative = fp4 ? 0.0 : 1.0 / 16 + 1.0 / 256, absolute = fp4 ? amax / 3 : amax * 1e-3;
    for (size_t i = 0; i < want.size(); ++i) {
      const double d = std::fabs(static_cast<double>(got[i]) - want[i]);
      err += d * d;
      norm += static_cast<double>(want[i]) * want[i];
      ASSERT_LE(d, relative * std::fabs(want[i]) + absolute)
          << t.name << " [" << i / t.shape.back() << ", " << i % t.shape.back() << "] " << encoding_name(encoding)
          << ": got " << got[i] << ", want " << want[i];
    }
    EXPECT_LT(std::sqrt(err / norm), fp4 ? 0.15 : 0.04) << t.name << " " << encoding_name(encoding);
    ++checked[encoding];
  }
  EXPECT_GT(checked[Encoding::FP8Block], 0);
  EXPECT_GT(checked[Encoding::FP4Rows], 0);
  fs::remove_all(bf16.dir());
  fs::remove_all(release.dir());
}

// The value scales the tiny model's deep forwards rely on (see compiler/synth_values.cpp).
TEST(SynthPack, ValuesHaveTheirDocumentedScales) {
  SynthPackOptions options;
  options.out_dir = fresh_dir("bf16").string();
  const PackIndex pack = write_and_open("dsv41-tiny", options);
  const ModelConfig& c = fixture("dsv41-tiny").config;
  auto stats = [&](const std::string& name, DType dtype) {
    const std::vector<uint8_t> b = tensor_bytes(pack, name);
    std::vector<float> v(b.size() / dtype_bytes(dtype));
    dequantize(Encoding::Plain, dtype, b.data(), nullptr, 1, static_cast<int64_t>(v.size()), v.data());
    double sum = 0, sq = 0;
    for (float x : v) sum += x, sq += static_cast<double>(x) * x;
    const double mean = sum / v.size();
    return std::pair<double, double>{mean, std::sqrt(sq / v.size() - mean * mean)};
  };
  const auto [wq_mean, wq_std] = stats("layers.0.attn.wq_a.weight", DType::BF16);
  EXPECT_NEAR(wq_std * std::sqrt(static_cast<double>(c.hidden_size)), 1.0, 0.05);
  EXPECT_NEAR(wq_mean, 0.0, 0.01);
  const auto [norm_mean, norm_std] = stats("layers.0.attn_norm.weight", DType::BF16);
  EXPECT_NEAR(norm_mean, 1.0, 0.02);
  EXPECT_GT(norm_std, 0.01);
  const auto [embed_mean, embed_std] = stats("embed.weight", DType::BF16);
  EXPECT_NEAR(embed_std, 1.0, 0.05);
  std::vector<float> base(static_cast<size_t>(c.mix_hc));
  const std::vector<uint8_t> b = tensor_bytes(pack, "layers.2.hc_ffn_base");
  std::memcpy(base.data(), b.data(), b.size());
  const int64_t hc = c.hc_mult;
  for (int64_t i = 0; i < hc; ++i)
    for (int64_t j = 0; j < hc; ++j)
      EXPECT_EQ(base[2 * hc + i * hc + j] > 0.5f, i == j) << "comb base [" << i << ", " << j << "]";
  fs::remove_all(options.out_dir);
}

TEST(SynthPack, RefusesBadShardCountsAndHugeDataPacks) {
  SynthPackOptions options;
  options.out_dir = fresh_dir("x").string();
  options.shards = 0;
  Status s = write_synth_pack(fixture("dsv41-tiny").config, fixture("dsv41-tiny").text, options);
  EXPECT_NE(s.message().find("shards 0"), std::string::npos) << s.message();
  options.shards = 1;
  options.format = SynthFormat::Release;
  s = write_synth_pack(fixture("dsv41-release").config, fixture("dsv41-release").text, options);
  EXPECT_NE(s.message().find("64 GiB"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--headers-only"), std::string::npos) << s.message();
  EXPECT_FALSE(fs::exists(options.out_dir)) << "a refused pack wrote files";
}

}  // namespace
}  // namespace dsv41
