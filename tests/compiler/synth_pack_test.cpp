// tests/compiler/synth_pack_test.cpp — synth-pack writes complete, deterministic, correctly quantized packs.
#include "compiler/synth/synth_pack.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "common/numeric_formats.h"
#include "common/pack_index.h"
#include "common/tensor_inventory.h"
#include "compiler/synth/safetensors_writer.h"
#include "compiler/synth/synth_encode.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {
namespace fs = std::filesystem;

using test::TempDir;

struct Fixture {
  ModelConfig config;
  std::string text;
};

Fixture fixture(const std::string& name) {
  return {test::fixture_config(name), test::read_file(test::fixture_config_path(name))};
}

PackIndex write_and_open(const std::string& fixture_name, const SynthPackOptions& options) {
  const Fixture f = fixture(fixture_name);
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
  const bool scaled = encoding != Encoding::Plain && encoding != Encoding::BF16;
  const std::vector<uint8_t> scale = scaled ? tensor_bytes(pack, scale_name(t.name)) : std::vector<uint8_t>{};
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

// Inputs where rounding decides: each code's value, the midpoints between neighbours and their next floats,
// both signs, zero, saturation, and a log-uniform spread of ordinary values.
std::vector<float> rounding_probes(float (*decode)(uint8_t), int codes, float max_value) {
  std::vector<float> probes = {0.0f, -0.0f, max_value * 1.01f, 1e30f};
  for (int c = 0; c + 1 < codes; ++c) {
    const float lo = decode(static_cast<uint8_t>(c)), hi = decode(static_cast<uint8_t>(c + 1)), mid = (lo + hi) / 2;
    for (float v : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) probes.push_back(v);
  }
  uint64_t state = 1;
  for (int i = 0; i < 20000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    probes.push_back(std::ldexp(1.0f + static_cast<float>(state >> 41) * 0x1p-23f, static_cast<int>(state >> 60) - 12));
  }
  const size_t n = probes.size();
  for (size_t i = 0; i < n; ++i) probes.push_back(-probes[i]);
  return probes;
}

TEST(SynthEncode, FastConvertersMatchTheReferenceBitForBit) {
  for (float v : rounding_probes(e4m3_to_f32, 0x7F, kE4M3Max))
    ASSERT_EQ(fast_f32_to_e4m3(v), f32_to_e4m3(v)) << "e4m3 of " << v;
  for (float v : rounding_probes(e2m1_to_f32, 8, kE2M1Max))
    ASSERT_EQ(fast_f32_to_e2m1(v), f32_to_e2m1(v)) << "e2m1 of " << v;
}

TEST(SynthPack, TinyBf16PackHoldsEveryTensor) {
  const Fixture tiny = fixture("dsv41-tiny");
  TempDir dir;
  SynthPackOptions options;
  options.out_dir = (dir / "pack").string();  // created by the writer
  const PackIndex pack = write_and_open("dsv41-tiny", options);
  expect_inventory(pack, tiny.config, SynthFormat::BF16);
  EXPECT_TRUE(pack.check_data_present().is_ok());
  std::printf("tiny bf16 pack: %.1f MB\n", pack.total_data_bytes() / 1e6);
  EXPECT_EQ(test::read_file(dir / "pack" / "config.json"), tiny.text);
}

TEST(SynthPack, TinyReleasePackHoldsEveryTensor) {
  TempDir dir;
  SynthPackOptions options;
  options.out_dir = dir.path().string();
  options.format = SynthFormat::Release;
  const auto start = std::chrono::steady_clock::now();
  const PackIndex pack = write_and_open("dsv41-tiny", options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect_inventory(pack, fixture("dsv41-tiny").config, SynthFormat::Release);
  EXPECT_TRUE(pack.check_data_present().is_ok());
  std::printf("tiny release pack: %.1f MB in %.2f s\n", pack.total_data_bytes() / 1e6, seconds);
  EXPECT_LT(seconds, 10.0) << "tiny release pack of " << pack.total_data_bytes() << " bytes";  // loose: shared CI
}

TEST(SynthPack, ShardedPackOpensThroughIndexWithTheSameBytes) {
  TempDir one("one"), three("three");
  SynthPackOptions options;
  options.out_dir = one.path().string();
  options.format = SynthFormat::Release;
  const PackIndex single = write_and_open("dsv41-tiny", options);
  SynthPackOptions sharded = options;
  sharded.out_dir = three.path().string();
  sharded.shards = 3;
  std::vector<std::string> progress;
  sharded.progress = [&](const std::string& line) { progress.push_back(line); };
  const PackIndex pack = write_and_open("dsv41-tiny", sharded);
  EXPECT_TRUE(fs::exists(three / "model.safetensors.index.json"));
  ASSERT_EQ(pack.shards().size(), 3u);
  EXPECT_EQ(pack.shards()[2].file_name, "model-00003-of-00003.safetensors");
  EXPECT_EQ(progress.size(), 3u);
  expect_inventory(pack, fixture("dsv41-tiny").config, SynthFormat::Release);
  for (const ShardInfo& s : pack.shards())  // balanced by bytes: no shard above half the pack
    EXPECT_LT(s.data_bytes, pack.total_data_bytes() / 2) << s.file_name;
  for (const TensorEntry& t : single.tensors()) {
    const TensorEntry* e = pack.find(t.name);
    ASSERT_NE(e, nullptr) << t.name;
    if (t.dtype == DType::F8_E8M0) {  // a scale sits in its weight's shard
      EXPECT_EQ(e->shard, pack.find(t.name.substr(0, t.name.size() - 5) + "weight")->shard) << t.name;
    }
  }
  for (const char* name :
       {"embed.weight", "layers.3.ffn.experts.5.w2.weight", "layers.3.ffn.experts.5.w2.scale", "head.weight"})
    EXPECT_EQ(tensor_bytes(single, name), tensor_bytes(pack, name)) << name << ": bytes depend on sharding";
  // Rewriting the folder as one shard leaves one pack: the old shards and index go.
  sharded.shards = 1;
  const PackIndex rewritten = write_and_open("dsv41-tiny", sharded);
  EXPECT_EQ(rewritten.shards().size(), 1u);
  EXPECT_FALSE(fs::exists(three / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(three / "model-00001-of-00003.safetensors"));
}

TEST(SynthPack, SameSeedSameBytesOtherSeedOtherBytes) {
  const Fixture tiny = fixture("dsv41-tiny");
  TempDir a("a"), b("b"), c("c");
  SynthPackOptions options;
  options.format = SynthFormat::Release;
  options.seed = 7;
  for (const TempDir* dir : {&a, &b}) {
    options.out_dir = dir->path().string();
    ASSERT_TRUE(write_synth_pack(tiny.config, tiny.text, options).is_ok());
  }
  options.out_dir = c.path().string();
  options.seed = 8;
  ASSERT_TRUE(write_synth_pack(tiny.config, tiny.text, options).is_ok());
  const std::string bytes_a = test::read_file(a / "model.safetensors");
  EXPECT_GT(bytes_a.size(), 1000u);
  EXPECT_TRUE(bytes_a == test::read_file(b / "model.safetensors")) << "two writes with seed 7 differ";
  const std::string bytes_c = test::read_file(c / "model.safetensors");
  EXPECT_EQ(bytes_a.size(), bytes_c.size());
  EXPECT_FALSE(bytes_a == bytes_c) << "seeds 7 and 8 give the same bytes";
}

TEST(SynthPack, ReleaseHeadersOnlyPackIsFastAndDescribesTheWholeModel) {
  const Fixture release = fixture("dsv41-release");
  for (int shards : {1, 48}) {
    TempDir dir(std::to_string(shards));
    SynthPackOptions options;
    options.out_dir = dir.path().string();
    options.format = SynthFormat::Release;
    options.headers_only = true;
    options.shards = shards;
    const auto start = std::chrono::steady_clock::now();
    const Status s = write_synth_pack(release.config, release.text, options);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(s.is_ok()) << s.message();
    std::printf("release headers-only pack, %d shard(s): written in %.2f s\n", shards, seconds);
    EXPECT_LT(seconds, 3.0) << shards << " shards";
    auto pack = PackIndex::open(options.out_dir);
    ASSERT_TRUE(pack.is_ok()) << pack.status().message();
    EXPECT_EQ(pack->shards().size(), static_cast<size_t>(shards));
    for (const ShardInfo& shard : pack->shards())
      EXPECT_EQ(fs::file_size(dir / shard.file_name), 8 + shard.header_length) << shard.file_name;
    EXPECT_GT(static_cast<double>(pack->total_data_bytes()), 300e9);
    EXPECT_FALSE(pack->check_data_present().is_ok());
    expect_inventory(*pack, release.config, SynthFormat::Release);
  }
}

// The release encodings dequantize to the bf16 format's values: proves scales, tiles and nibble order.
TEST(SynthPack, ReleaseValuesDequantizeToTheBf16Values) {
  TempDir bf16_dir("bf16"), release_dir("release");
  SynthPackOptions options;
  options.seed = 11;
  options.out_dir = bf16_dir.path().string();
  const PackIndex bf16 = write_and_open("dsv41-tiny", options);
  options.out_dir = release_dir.path().string();
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
    // FP8 e4m3 keeps 3 mantissa bits: within 1/16 relative (plus bf16's own rounding), plus subnormal
    // steps near zero. FP4 e2m1 steps are up to a third of a group's amax.
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
}

// The value scales the tiny model's deep forwards rely on (see compiler/synth/synth_values.cpp).
TEST(SynthPack, ValuesHaveTheirDocumentedScales) {
  const Fixture tiny = fixture("dsv41-tiny");
  const ModelConfig& c = tiny.config;
  TempDir dir;
  SynthPackOptions options;
  options.out_dir = dir.path().string();
  const PackIndex pack = write_and_open("dsv41-tiny", options);
  auto stats = [&](const std::string& name) {
    const std::vector<uint8_t> b = tensor_bytes(pack, name);
    std::vector<float> v(b.size() / 2);
    dequantize(Encoding::BF16, DType::BF16, b.data(), nullptr, 1, static_cast<int64_t>(v.size()), v.data());
    double sum = 0, sq = 0;
    for (float x : v) sum += x, sq += static_cast<double>(x) * x;
    const double mean = sum / v.size();
    return std::pair<double, double>{mean, std::sqrt(sq / v.size() - mean * mean)};
  };
  const auto [wq_mean, wq_std] = stats("layers.0.attn.wq_a.weight");
  EXPECT_NEAR(wq_std * std::sqrt(static_cast<double>(c.hidden_size)), 1.0, 0.05);
  EXPECT_NEAR(wq_mean, 0.0, 0.01);
  const auto [w2_mean, w2_std] = stats("layers.0.ffn.experts.0.w2.weight");
  EXPECT_NEAR(w2_std * std::sqrt(static_cast<double>(c.moe_intermediate_size)), 0.5, 0.03);
  const auto [norm_mean, norm_std] = stats("layers.0.attn_norm.weight");
  EXPECT_NEAR(norm_mean, 1.0, 0.02);
  EXPECT_GT(norm_std, 0.01);
  const auto [embed_mean, embed_std] = stats("embed.weight");
  EXPECT_NEAR(embed_std, 1.0, 0.05);
  std::vector<float> base(static_cast<size_t>(c.mix_hc));
  const std::vector<uint8_t> b = tensor_bytes(pack, "layers.2.hc_ffn_base");
  ASSERT_EQ(b.size(), base.size() * 4);
  std::memcpy(base.data(), b.data(), b.size());
  const int64_t hc = c.hc_mult;
  for (int64_t i = 0; i < hc; ++i)
    for (int64_t j = 0; j < hc; ++j)
      EXPECT_EQ(base[2 * hc + i * hc + j] > 0.5f, i == j) << "comb base [" << i << ", " << j << "]";
}

TEST(SynthPack, RefusesBadShardCountsAndHugeDataPacks) {
  const Fixture tiny = fixture("dsv41-tiny"), release = fixture("dsv41-release");
  TempDir dir;
  SynthPackOptions options;
  options.out_dir = (dir / "pack").string();
  options.shards = 0;
  Status s = write_synth_pack(tiny.config, tiny.text, options);
  EXPECT_NE(s.message().find("shards 0"), std::string::npos) << s.message();
  options.shards = 1;
  options.format = SynthFormat::Release;
  s = write_synth_pack(release.config, release.text, options);
  EXPECT_NE(s.message().find("64 GiB"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--headers-only"), std::string::npos) << s.message();
  EXPECT_FALSE(fs::exists(options.out_dir)) << "a refused pack wrote files";
}

}  // namespace
}  // namespace dsv41
