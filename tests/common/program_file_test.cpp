// tests/common/program_file_test.cpp — the loader refuses corrupt programs (identifier, version, truncation, flips, ranges) and never crashes.
#include "common/program_file.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "common/dtype.h"
#include "common/model_config.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {
using test::TempDir;

// A hand-built program for dsv41-tiny, world 3 rank 1; each field can be spoiled on its own.
struct Spec {
  uint32_t format_version = kProgramFormatVersion;
  std::string identifier = kProgramFileIdentifier;
  std::string config_json = test::read_file(test::fixture_config_path("dsv41-tiny"));
  bool digest_matches = true;
  int world = 3, rank = 1, share_world = 3, share_rank = 1;
  int64_t heads_end = 12;
  uint64_t header_length = 1000, data_bytes = 4096;  // data [1008, 5104)
  std::vector<fb::ByteRun> runs = {fb::ByteRun(1008 + 16, 16, 64, 4, 0)};
  fb::DType dtype = fb::DType::BF16, activations = fb::DType::BF16;
  bool with_share = true, with_settings = true, with_decode_rows = true, with_prefill_rows = true;
};

std::vector<uint8_t> build(const Spec& s) {
  flatbuffers::FlatBufferBuilder b;
  const auto config_json = b.CreateString(s.config_json);
  const auto shards = b.CreateVector(std::vector<flatbuffers::Offset<fb::Shard>>{
      fb::CreateShard(b, b.CreateString("model.safetensors"), s.header_length, s.data_bytes, 77)});
  const auto target = b.CreateString("none");
  const auto span = [&](int64_t begin, int64_t end) { return fb::CreateSpan(b, begin, end); };
  const auto groups = span(3, 6), heads = span(6, s.heads_end), experts = span(256, 512), vocab = span(512, 896);
  const auto share = fb::CreateShare(b, s.share_world, s.share_rank, groups, heads, experts, vocab);
  const auto decode_rows = b.CreateVector(std::vector<int64_t>{1, 2, 4});
  const auto prefill_rows = b.CreateVector(std::vector<int64_t>{64});
  fb::SettingsBuilder settings_builder(b);
  settings_builder.add_context(4096);
  settings_builder.add_slots(2);
  settings_builder.add_activations(s.activations);
  if (s.with_decode_rows) settings_builder.add_decode_rows(decode_rows);
  if (s.with_prefill_rows) settings_builder.add_prefill_rows(prefill_rows);
  const auto settings = settings_builder.Finish();
  const auto tensor = fb::CreatePlannedTensor(b, b.CreateString("layers.0.attn.wo_b.weight"), s.dtype,
                                              b.CreateVector(std::vector<int64_t>{4, 32}),
                                              b.CreateVector(std::vector<int64_t>{4, 8}), fb::SplitRule::InputCols,
                                              fb::Encoding::BF16, false, b.CreateVectorOfStructs(s.runs));
  const auto weights = b.CreateVector(std::vector<flatbuffers::Offset<fb::PlannedTensor>>{tensor});
  const auto ledger = fb::CreateMemoryLedger(b, 1, 2, 0, 3, 6, 4, 13, 0);
  uint64_t digest = 0;
  if (auto config = parse_model_config(s.config_json, "spec"); config.is_ok()) digest = config_digest(*config);
  fb::ProgramBuilder p(b);
  p.add_format_version(s.format_version);
  p.add_config_json(config_json);
  p.add_config_digest(s.digest_matches ? digest : digest + 1);
  p.add_shards(shards);
  p.add_target(target);
  p.add_world(s.world);
  p.add_rank(s.rank);
  if (s.with_share) p.add_share(share);
  if (s.with_settings) p.add_settings(settings);
  p.add_weights(weights);
  p.add_ledger(ledger);
  b.Finish(p.Finish(), s.identifier.c_str());
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

std::string refusal(std::vector<uint8_t> bytes) {
  auto file = ProgramFile::from_bytes(std::move(bytes), "prog");
  return file.is_ok() ? "(accepted)" : file.status().message();
}

template <class Edit>
std::string refusal_of(Edit edit) {
  Spec spec;
  edit(spec);
  return refusal(build(spec));
}

TEST(ProgramFile, HandBuiltProgramLoadsAndRoundTripsThroughAFile) {
  const std::vector<uint8_t> bytes = build(Spec{});
  ASSERT_EQ(refusal(bytes), "(accepted)");
  TempDir dir;
  const std::string path = (dir / "rank1.fb").string();
  ASSERT_TRUE(write_file_atomic(path, bytes.data(), bytes.size()).is_ok());
  EXPECT_FALSE(test::fs::exists(path + ".tmp"));
  auto file = ProgramFile::load(path);
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  EXPECT_EQ(file->bytes(), bytes);
  EXPECT_EQ(file->source(), path);
  EXPECT_EQ(file->program().world(), 3);
  EXPECT_EQ(file->program().weights()->Get(0)->runs()->Get(0)->count(), 4u);
}

TEST(ProgramFile, MissingFileAndUnwritableFolderAreRefused) {
  TempDir dir;
  auto missing = ProgramFile::load((dir / "absent.fb").string());
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().message(), (dir / "absent.fb").string() + ": cannot open");
  const Status s = write_file_atomic((dir / "no" / "such" / "x.fb").string(), "x", 1);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("cannot create"), std::string::npos) << s.message();
}

TEST(ProgramFile, WrongIdentifierAndTinyFilesAreNotPrograms) {
  const std::string expected = "prog: not a dsv41 program (file identifier \"DSV4\" missing)";
  EXPECT_EQ(refusal_of([](Spec& s) { s.identifier = "DSV3"; }), expected);
  EXPECT_EQ(refusal({}), expected);
  EXPECT_EQ(refusal({'D', 'S', 'V', '4'}), expected);
  std::vector<uint8_t> text(64, 'x');
  EXPECT_EQ(refusal(text), expected);
}

TEST(ProgramFile, OtherFormatVersionsAreRefusedByNumber) {
  for (uint32_t version : {0u, kProgramFormatVersion - 1, kProgramFormatVersion + 1, 0xFFFFFFFFu}) {
    if (version == kProgramFormatVersion) continue;
    EXPECT_EQ(refusal_of([&](Spec& s) { s.format_version = version; }),
              fmt::format("prog: program format version {}, this build reads version {}; re-plan it with this dsv41c",
                          version, kProgramFormatVersion));
  }
}

TEST(ProgramFile, InconsistentTablesAreRefusedNamingTheField) {
  EXPECT_EQ(refusal_of([](Spec& s) { s.rank = 3; s.share_rank = 3; }), "prog: rank 3 of world 3: not a valid rank");
  EXPECT_EQ(refusal_of([](Spec& s) { s.share_world = 4; }),
            "prog: share: world 4 rank 1 disagree with the program's world 3 rank 1");
  EXPECT_EQ(refusal_of([](Spec& s) { s.heads_end = 17; }),
            "prog: share.heads: [6, 17) is not a range inside [0, 16)");
  EXPECT_EQ(refusal_of([](Spec& s) { s.with_share = false; }), "prog: share: missing");
  EXPECT_EQ(refusal_of([](Spec& s) { s.with_settings = false; }), "prog: config, settings, ledger or target: missing");
  EXPECT_EQ(refusal_of([](Spec& s) { s.digest_matches = false; }),
            "prog: embedded config.json does not match the program's config digest");
  EXPECT_EQ(refusal_of([](Spec& s) { s.config_json = "{}"; }),
            "prog: embedded config.json: vocab_size: missing (required field)");
}

// `inspect` and the runtime read the row buckets: a program without them must not load.
TEST(ProgramFile, SettingsWithoutRowBucketsAreRefused) {
  const std::string missing = "prog: settings.decode_rows or settings.prefill_rows: missing";
  EXPECT_EQ(refusal_of([](Spec& s) { s.with_decode_rows = false; }), missing);
  EXPECT_EQ(refusal_of([](Spec& s) { s.with_prefill_rows = false; }), missing);
}

// The verifier does not check enum values; tables are indexed with them, so the loader must.
TEST(ProgramFile, OutOfRangeEnumsAreRefused) {
  EXPECT_EQ(refusal_of([](Spec& s) { s.dtype = static_cast<fb::DType>(100); }),
            "prog: weights.layers.0.attn.wo_b.weight: dtype 100, rule 2 or encoding 1 is not a known value");
  EXPECT_NE(refusal_of([](Spec& s) { s.dtype = static_cast<fb::DType>(-1); }), "(accepted)");
  EXPECT_EQ(refusal_of([](Spec& s) { s.activations = fb::DType::F32; }), "(accepted)");
  EXPECT_EQ(refusal_of([](Spec& s) { s.activations = static_cast<fb::DType>(100); }),
            "prog: settings.activations: dtype 100, expected BF16 or F32");
}

// Runs must stay inside their shard's data section [8 + header_length, + data_bytes).
TEST(ProgramFile, RunsOutsideTheirShardDataAreRefused) {
  const auto with_run = [](uint64_t offset, uint64_t length, uint64_t stride, uint64_t count, int shard = 0) {
    return refusal_of([=](Spec& s) { s.runs = {fb::ByteRun(offset, length, stride, count, shard)}; });
  };
  EXPECT_EQ(with_run(1008, 4096, 4096, 1), "(accepted)");
  EXPECT_EQ(with_run(1008, 16, 64, 64), "(accepted)");  // last row ends at 1008 + 63 * 64 + 16 = 5056
  EXPECT_EQ(with_run(1008, 4097, 4097, 1),
            "prog: weights.layers.0.attn.wo_b.weight: run at offset 1008 (1 x 4097 bytes, stride 4097) leaves "
            "model.safetensors's data [1008, 5104)");
  EXPECT_EQ(with_run(1000, 16, 16, 1),
            "prog: weights.layers.0.attn.wo_b.weight: run at offset 1000 (1 x 16 bytes, stride 16) leaves "
            "model.safetensors's data [1008, 5104)");
  EXPECT_NE(with_run(1008, 16, 64, 65), "(accepted)") << "the 65th row ends past the data";
  EXPECT_EQ(with_run(1008, 16, 16, 1, 1), "prog: weights.layers.0.attn.wo_b.weight: shard index 1 outside 0..0");
  EXPECT_EQ(with_run(1008, 16, 16, 1, -1), "prog: weights.layers.0.attn.wo_b.weight: shard index -1 outside 0..0");
  EXPECT_EQ(with_run(1008, 16, 16, 0),
            "prog: weights.layers.0.attn.wo_b.weight: run of 0 x 16 bytes with stride 16 is malformed");
  EXPECT_EQ(with_run(1008, 16, 8, 2),
            "prog: weights.layers.0.attn.wo_b.weight: run of 2 x 16 bytes with stride 8 is malformed");
}

// Sizes chosen so that offset + (count - 1) * stride + length wraps around 2^64 to a small number.
TEST(ProgramFile, RunsWhoseEndWrapsAroundAreRefused) {
  const auto with_run = [](uint64_t offset, uint64_t length, uint64_t stride, uint64_t count) {
    return refusal_of([=](Spec& s) { s.runs = {fb::ByteRun(offset, length, stride, count, 0)}; });
  };
  const auto leaves = [](uint64_t offset, uint64_t count, uint64_t length, uint64_t stride) {
    return fmt::format("prog: weights.layers.0.attn.wo_b.weight: run at offset {} ({} x {} bytes, stride {}) leaves "
                       "model.safetensors's data [1008, 5104)", offset, count, length, stride);
  };
  // (count - 1) * stride wraps to 0; offset + length wraps; 4 * 2^62 wraps to 0.
  EXPECT_EQ(with_run(1008, 1, 2, (1ull << 63) + 1), leaves(1008, (1ull << 63) + 1, 1, 2));
  EXPECT_EQ(with_run(1008, 0ull - 1000, 0ull - 1000, 1), leaves(1008, 1, 0ull - 1000, 0ull - 1000));
  EXPECT_EQ(with_run(1008, 16, 1ull << 62, 5), leaves(1008, 5, 16, 1ull << 62));
  EXPECT_EQ(refusal_of([](Spec& s) {
              s.header_length = 0ull - 8;
              s.runs = {fb::ByteRun(16, 16, 16, 1, 0)};
            }),
            "prog: shards.model.safetensors: header length 18446744073709551608 and data size 4096 overflow a file "
            "offset");
}

// Damage near the front (root offset, the root table's vtable offset) must trip the verifier.
TEST(ProgramFile, DamagedRootAndVtableOffsetsAreRefused) {
  const std::vector<uint8_t> good = build(Spec{});
  const std::string corrupt = "prog: corrupt program (the flatbuffers verifier refused it)";
  std::vector<uint8_t> bytes = good;
  bytes[0] = bytes[1] = bytes[2] = 0xFF;
  bytes[3] = 0x7F;
  EXPECT_EQ(refusal(bytes), corrupt) << "root offset past the end";
  bytes = good;
  const uint32_t root = flatbuffers::ReadScalar<uint32_t>(good.data());
  ASSERT_LT(root + 4, good.size());
  flatbuffers::WriteScalar<int32_t>(bytes.data() + root, 0x40000000);
  EXPECT_EQ(refusal(bytes), corrupt) << "root table's vtable far outside the buffer";
  bytes = good;
  flatbuffers::WriteScalar<uint32_t>(bytes.data(), static_cast<uint32_t>(good.size() - 2));
  EXPECT_EQ(refusal(bytes), corrupt) << "root table straddling the end";
}

// A cut may only be accepted when it removed nothing but the builder's zero padding at the end.
void expect_truncations_refused(const std::vector<uint8_t>& good, const std::vector<size_t>& sizes) {
  for (size_t size : sizes) {
    const std::string why = refusal(std::vector<uint8_t>(good.begin(), good.begin() + size));
    if (why != "(accepted)") continue;
    const bool only_padding = good.size() - size < 8 &&
                              std::all_of(good.begin() + size, good.end(), [](uint8_t b) { return b == 0; });
    EXPECT_TRUE(only_padding) << "truncated to " << size << " of " << good.size() << " bytes and accepted";
  }
}

TEST(ProgramFile, EveryTruncationOfAHandBuiltProgramIsRefused) {
  const std::vector<uint8_t> good = build(Spec{});
  std::vector<size_t> sizes(good.size());
  for (size_t i = 0; i < sizes.size(); ++i) sizes[i] = i;
  expect_truncations_refused(good, sizes);
}

}  // namespace
}  // namespace dsv41
