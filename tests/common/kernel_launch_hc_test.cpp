// tests/common/kernel_launch_hc_test.cpp — the decode splits of hc_mix's and hc_collapse_norm's launches
// (common/kernel_launch_hc.cpp): hc_mix's 128 vectors of four inputs a chunk, every chunk covered, the phase's
// blocks within two blocks of 512 an SM, never more blocks a row than kernels/hc_mix.cuh's table holds;
// hc_collapse_norm's 16 blocks a row; both a block a row above 16 rows.
#include <string>

#include <gtest/gtest.h>

#include "common/kernel_launch.h"

namespace dsv41 {
namespace {

LaunchDims launch(const std::string& op, int64_t hidden, int64_t streams, int64_t rows) {
  Call call;
  call.op = op;
  call.constants = {{"hidden", hidden}, {"streams", streams}};
  if (op == "hc_mix") call.constants.push_back({"sinkhorn_iters", 20});
  CallEnv env;
  env.rows = rows;
  auto dims = launch_dims(call, env);
  EXPECT_TRUE(dims.is_ok()) << op << ": " << dims.status().message();
  return dims.is_ok() ? *dims : LaunchDims{};
}

LaunchDims mix_launch(int64_t hidden, int64_t streams, int64_t rows) { return launch("hc_mix", hidden, streams, rows); }

TEST(HcMixLaunch, TheReleaseShapeTakesAChunkABlockAtOneRowAndFewerBlocksAsRowsGrow) {
  // S·D = 20480 inputs: 5120 vectors, 40 chunks.
  const LaunchDims one = mix_launch(5120, 4, 1);
  EXPECT_EQ(one.block, 512);
  EXPECT_EQ(one.grid[0], 1);
  EXPECT_EQ(one.grid[1], 40);
  EXPECT_EQ(one.grid[2], 1);
  EXPECT_EQ(mix_launch(5120, 4, 6).grid[1], 40);   // 240 blocks
  EXPECT_EQ(mix_launch(5120, 4, 8).grid[1], 20);   // two chunks a block: 160 blocks
  EXPECT_EQ(mix_launch(5120, 4, 16).grid[1], 14);  // three chunks a block (the last block two)
  for (int64_t rows = 1; rows <= 16; ++rows) {
    const LaunchDims d = mix_launch(5120, 4, rows);
    EXPECT_LE(d.grid[0] * d.grid[1], 256) << rows;
  }
  const LaunchDims prefill = mix_launch(5120, 4, 17);
  EXPECT_EQ(prefill.grid[0], 17);
  EXPECT_EQ(prefill.grid[1], 1);
}

TEST(HcMixLaunch, SmallRowsTakeOneBlockAChunkAndWideMixesStayWithinTheTable) {
  EXPECT_EQ(mix_launch(256, 4, 1).grid[1], 2);  // the tiny fixture: 1024 inputs, two chunks
  EXPECT_EQ(mix_launch(4, 1, 1).grid[1], 1);
  // S = 16: M = 288, so the table and the gather hold 4096 / 289 = 14 slices a row.
  const LaunchDims wide = mix_launch(5120, 16, 1);
  EXPECT_LE(wide.grid[1], 14);
  EXPECT_GE(wide.grid[1] * 128 * ((5120 * 16 / 4 / 128 + wide.grid[1] - 1) / wide.grid[1]), 5120 * 16 / 4);
}

TEST(HcCollapseNormLaunch, SixteenBlocksARowAtDecodeAndABlockARowAbove) {
  for (int64_t rows : {1, 8, 16}) {
    const LaunchDims d = launch("hc_collapse_norm", 5120, 4, rows);
    EXPECT_EQ(d.block, 512) << rows;
    EXPECT_EQ(d.grid[0], rows);
    EXPECT_EQ(d.grid[1], 16) << rows;
    EXPECT_EQ(d.grid[2], 1) << rows;
  }
  const LaunchDims prefill = launch("hc_collapse_norm", 5120, 4, 17);
  EXPECT_EQ(prefill.grid[0], 17);
  EXPECT_EQ(prefill.grid[1], 1);
}

}  // namespace
}  // namespace dsv41
