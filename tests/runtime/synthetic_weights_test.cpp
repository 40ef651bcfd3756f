// tests/runtime/synthetic_weights_test.cpp — `--synthetic-weights`' fill (runtime/gpu/synthetic_weights.h) on
// the host: the same bytes for any chunking and thread count, another seed gives other bytes, and
// every stored value is valid and bounded for its dtype.
#include "runtime/gpu/synthetic_weights.h"

#include <cmath>
#include <cstring>
#include <map>

#include <gtest/gtest.h>

#include "common/numeric_formats.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::gpu {
namespace {

std::vector<uint8_t> fill(const fb::Program& p, const StoredLayout& layout, uint64_t seed, int threads, size_t chunk) {
  HostSink sink(layout.total);
  LoadOptions options;
  options.threads = threads;
  options.chunk_bytes = chunk;
  auto stats = fill_synthetic_weights(p, layout, seed, sink, options);
  EXPECT_TRUE(stats.is_ok()) << stats.status().message();
  return sink.region();
}

TEST(SyntheticWeights, DeterministicValidAndBounded) {
  auto programs = test::plan_programs(test::tiny_pack("release"), 4, test::small_settings());
  ASSERT_EQ(programs.size(), 4u);
  const fb::Program& p = programs[3].program();  // the smallest share: a fast test
  std::vector<int64_t> every;
  for (uint32_t i = 0; i < p.weights()->size(); ++i) every.push_back(i);
  const StoredLayout layout = plan_stored_layout(p, every);

  const std::vector<uint8_t> a = fill(p, layout, 3, 2, 4096);
  const std::vector<uint8_t> b = fill(p, layout, 3, 3, 65536 + 6);  // chunks start mid-element
  const std::vector<uint8_t> c = fill(p, layout, 4, 2, 4096);
  EXPECT_TRUE(a == b) << "the bytes depend on the seed only, not on chunking or threads";
  EXPECT_FALSE(a == c) << "another seed, other bytes";

  std::map<fb::DType, int64_t> seen;
  for (uint32_t t = 0; t < p.weights()->size(); ++t) {
    if (layout.offset[t] < 0) continue;
    const fb::DType dtype = p.weights()->Get(t)->dtype();
    const uint8_t* bytes = a.data() + layout.offset[t];
    const std::string name = p.weights()->Get(t)->name()->str();
    seen[dtype] += static_cast<int64_t>(layout.bytes[t]);
    for (uint64_t i = 0; i < layout.bytes[t]; ++i) {
      if (dtype == fb::DType::BF16 && i % 2 == 0) {
        const float v = bf16_to_f32(static_cast<uint16_t>(bytes[i] | bytes[i + 1] << 8));
        // Rounding to bf16 may land just past the amplitude: on the amplitude's own bf16 value.
        ASSERT_TRUE(std::isfinite(v) && std::fabs(v) <= bf16_round(kSyntheticAmplitude)) << name << " value " << i / 2 << ": " << v;
      } else if (dtype == fb::DType::F32 && i % 4 == 0) {
        float v;
        std::memcpy(&v, bytes + i, 4);
        ASSERT_TRUE(std::isfinite(v) && std::fabs(v) <= kSyntheticAmplitude) << name << " value " << i / 4 << ": " << v;
      } else if (dtype == fb::DType::F8_E4M3) {
        const float v = e4m3_to_f32(bytes[i]);
        ASSERT_TRUE(std::isfinite(v) && std::fabs(v) <= 1.875f) << name << " byte " << i << ": " << v;
      } else if (dtype == fb::DType::F8_E8M0) {
        ASSERT_TRUE(bytes[i] >= 120 && bytes[i] <= 127) << name << " byte " << i << ": " << int(bytes[i]);
      }
    }
  }
  EXPECT_GT(seen[fb::DType::F8_E4M3], 0);
  EXPECT_GT(seen[fb::DType::F8_E8M0], 0);
  EXPECT_GT(seen[fb::DType::BF16], 0);
}

}  // namespace
}  // namespace dsv41::gpu
