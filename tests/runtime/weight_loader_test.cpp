// tests/runtime/weight_loader_test.cpp — the stored-weight loader (runtime/gpu/weight_loader.h) on the host:
// every byte of every run lands where the layout says, with many small chunks and strided runs; the
// checks before the first byte refuse a truncated shard.
#include "runtime/gpu/weight_loader.h"

#include <fstream>

#include <gtest/gtest.h>

#include "common/program_calls.h"
#include "common/tensor_inventory.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::gpu {
namespace {

std::vector<int64_t> referenced(const fb::Program& p) {
  std::vector<int64_t> out;
  auto calls = read_call_lists(p);
  EXPECT_TRUE(calls.is_ok()) << calls.status().message();
  if (!calls.is_ok()) return out;
  for (const Phase& phase : calls->phases)
    for (const Call& call : phase.calls)
      for (const Arg& arg : call.args)
        if (arg.kind == ArgKind::Weight || arg.kind == ArgKind::WeightList) out.insert(out.end(), arg.ints.begin(), arg.ints.end());
  return out;
}

// Each run of tensor t read one repeat at a time: the reference.
std::vector<uint8_t> read_directly(const test::fs::path& dir, const fb::Program& p, uint32_t t) {
  std::vector<uint8_t> out;
  for (const fb::ByteRun* run : *p.weights()->Get(t)->runs()) {
    std::ifstream in(dir / p.shards()->Get(run->shard())->file_name()->str(), std::ios::binary);
    for (uint64_t i = 0; i < run->count(); ++i) {
      std::vector<uint8_t> piece(run->length());
      in.seekg(static_cast<std::streamoff>(run->offset() + i * run->stride()));
      in.read(reinterpret_cast<char*>(piece.data()), static_cast<std::streamsize>(piece.size()));
      out.insert(out.end(), piece.begin(), piece.end());
    }
  }
  return out;
}

TEST(WeightLoader, EveryRunLandsWhereTheLayoutSays) {
  const test::fs::path& pack = test::tiny_pack("release");
  auto programs = test::plan_programs(pack, 3, test::small_settings());
  ASSERT_EQ(programs.size(), 3u);
  const fb::Program& p = programs[1].program();
  const StoredLayout layout = plan_stored_layout(p, referenced(p));
  ASSERT_GT(layout.total, 0u);
  int loaded = 0, scales = 0, strided = 0;
  for (uint32_t t = 0; t < p.weights()->size(); ++t) {
    if (layout.offset[t] < 0) continue;
    ++loaded;
    scales += p.weights()->Get(t)->name()->str().find("scale") != std::string::npos;
    for (const fb::ByteRun* run : *p.weights()->Get(t)->runs()) strided += run->count() > 1 && run->stride() != run->length();
    EXPECT_EQ(layout.offset[t] % 256, 0) << p.weights()->Get(t)->name()->str();
  }
  EXPECT_GT(scales, 0) << "quantized weights bring their scales";
  EXPECT_GT(strided, 0) << "input-split weights (strided runs) are covered";

  HostSink sink(layout.total);
  LoadOptions options;
  options.threads = 3;
  options.chunk_bytes = 4096;  // many chunks, strided runs split across them
  auto stats = load_stored_weights(p, pack.string(), layout, sink, options);
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  uint64_t expected_bytes = 0;
  for (uint32_t t = 0; t < p.weights()->size(); ++t) {
    if (layout.offset[t] < 0) continue;
    const std::vector<uint8_t> want = read_directly(pack, p, t);
    ASSERT_EQ(want.size(), layout.bytes[t]);
    expected_bytes += want.size();
    ASSERT_TRUE(std::equal(want.begin(), want.end(), sink.region().begin() + layout.offset[t]))
        << p.weights()->Get(t)->name()->str();
  }
  EXPECT_EQ(stats->bytes, expected_bytes);
  std::printf("%d tensors (%d scales, %d strided runs), %llu bytes\n", loaded, scales, strided,
              static_cast<unsigned long long>(expected_bytes));
}

TEST(WeightLoader, ATruncatedShardIsRefusedBeforeAnyRead) {
  test::TempDir dir("truncated");
  const test::fs::path& pack = test::tiny_pack("release");
  for (const auto& entry : test::fs::directory_iterator(pack)) test::fs::copy(entry.path(), dir / entry.path().filename());
  auto programs = test::plan_programs(pack, 1, test::small_settings());
  ASSERT_EQ(programs.size(), 1u);
  const fb::Program& p = programs[0].program();
  const std::string shard = p.shards()->Get(1)->file_name()->str();
  const uint64_t size = test::fs::file_size(dir / shard);
  test::fs::resize_file(dir / shard, size - 1);
  const StoredLayout layout = plan_stored_layout(p, referenced(p));
  HostSink sink(layout.total);
  auto stats = load_stored_weights(p, dir.path().string(), layout, sink, LoadOptions{});
  ASSERT_FALSE(stats.is_ok());
  EXPECT_NE(stats.status().message().find(shard), std::string::npos) << stats.status().message();
  EXPECT_NE(stats.status().message().find(std::to_string(size - 1) + " bytes"), std::string::npos) << stats.status().message();
  EXPECT_NE(stats.status().message().find("says " + std::to_string(size)), std::string::npos) << stats.status().message();
}

}  // namespace
}  // namespace dsv41::gpu
