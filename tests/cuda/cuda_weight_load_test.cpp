// tests/cuda/cuda_weight_load_test.cpp — the stored-weight loader into device memory (pinned staging,
// async copies; runtime/gpu/device_sink.h) lands the same bytes as the host sink (label gpu; skips
// without a driver). Prints the load's GB/s.
#include <gtest/gtest.h>

#include "common/program_calls.h"
#include "runtime/gpu/device_sink.h"
#include "runtime/gpu/weight_loader.h"
#include "tests/cuda/cuda_test_device.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::cuda_test {
namespace {

using CudaWeightLoad = DeviceTest;

TEST_F(CudaWeightLoad, DeviceSinkLandsTheHostSinksBytes) {
  gpu::CudaDriver& driver = *device_.driver;
  for (const std::string format : {"release", "bf16"}) {
    SCOPED_TRACE(format);
    const auto& pack = test::tiny_pack(format);
    auto programs = test::plan_programs(pack, 2, test::small_settings());
    ASSERT_EQ(programs.size(), 2u);
    const fb::Program& p = programs[0].program();
    std::vector<int64_t> every;
    for (uint32_t i = 0; i < p.weights()->size(); ++i) every.push_back(i);
    const gpu::StoredLayout layout = gpu::plan_stored_layout(p, every);
    gpu::HostSink host(layout.total);
    gpu::LoadOptions options;
    options.threads = 4;
    options.chunk_bytes = size_t{1} << 20;
    auto host_stats = gpu::load_stored_weights(p, pack.string(), layout, host, options);
    ASSERT_TRUE(host_stats.is_ok()) << host_stats.status().message();

    auto region = gpu::DeviceBuffer::allocate(driver, layout.total);
    ASSERT_TRUE(region.is_ok()) << region.status().message();
    ASSERT_TRUE(region->fill(0xA5).is_ok());
    ASSERT_TRUE(driver.synchronize().is_ok());
    options.progress = stdout;
    gpu::DeviceSink sink(driver, region->ptr(), layout.total);
    auto stats = gpu::load_stored_weights(p, pack.string(), layout, sink, options);
    ASSERT_TRUE(stats.is_ok()) << stats.status().message();
    std::vector<uint8_t> back(layout.total);
    ASSERT_TRUE(region->download(back.data(), back.size()).is_ok());
    for (uint32_t t = 0; t < p.weights()->size(); ++t) {
      if (layout.offset[t] < 0) continue;
      const auto* want = host.region().data() + layout.offset[t];
      ASSERT_TRUE(std::equal(want, want + layout.bytes[t], back.data() + layout.offset[t]))
          << p.weights()->Get(t)->name()->str();
    }
    std::printf("%s pack, world 2 rank 0: %.1f MB to the device at %.2f GB/s (host sink %.2f GB/s)\n", format.c_str(),
                stats->bytes / 1e6, stats->gb_per_s(), host_stats->gb_per_s());
  }
}

}  // namespace
}  // namespace dsv41::cuda_test
