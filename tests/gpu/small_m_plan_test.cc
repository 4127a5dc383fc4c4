// CPU tests of the small-M kernel's launch plan (tile height, split-K, workspace): pure host
// arithmetic, runs without a GPU.
#include <gtest/gtest.h>

#include "gemm/kernel.h"
#include "sm90/small_m_gemm.h"

namespace gemm::kernel::sm90 {
namespace {

StridedBatch Shape(int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
  StridedBatch args;
  args.problem.m = m;
  args.problem.n = n;
  args.problem.k = k;
  args.batch = batch;
  return args;
}

TEST(SmallMPlan, UseSmallMCoversDecodeRowsOnly) {
  EXPECT_TRUE(UseSmallM(Shape(1, 8192, 8192), 132));
  EXPECT_TRUE(UseSmallM(Shape(16, 1, 1), 132));
  EXPECT_FALSE(UseSmallM(Shape(17, 8192, 8192), 132));  // the WGMMA kernel is faster there
  EXPECT_FALSE(UseSmallM(Shape(129, 8192, 8192), 132));
  EXPECT_FALSE(UseSmallM(Shape(0, 8192, 8192), 132));
}

TEST(SmallMPlan, MTileFollowsM) {
  EXPECT_EQ(PlanSmallM(Shape(1, 64, 64), 132).m_tile, 16);
  EXPECT_EQ(PlanSmallM(Shape(16, 64, 64), 132).m_tile, 16);
  EXPECT_EQ(PlanSmallM(Shape(17, 64, 64), 132).m_tile, 32);
  EXPECT_EQ(PlanSmallM(Shape(64, 64, 64), 132).m_tile, 64);
  EXPECT_EQ(PlanSmallM(Shape(65, 64, 64), 132).m_tile, 128);
  EXPECT_EQ(PlanSmallM(Shape(128, 64, 64), 132).m_tile, 128);
}

TEST(SmallMPlan, EverySmStreamsForDecodeShapes) {
  for (int64_t m : {1, 16, 32, 64, 128}) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{8192, 8192}, {28672, 8192}, {8192, 28672}}) {
      const SmallMPlan plan = PlanSmallM(Shape(m, n, k), 132);
      SCOPED_TRACE(::testing::Message() << m << "x" << n << "x" << k << " ctas " << plan.ctas);
      EXPECT_EQ(plan.ctas, m <= 16 ? 132 : 264) << "one CTA per SM (two for m_tile >= 32)";
      EXPECT_EQ(plan.total_iters, plan.n_tiles * plan.k_blocks);
      EXPECT_EQ(plan.workspace_bytes,
                plan.split_tiles ? static_cast<std::size_t>(plan.ctas) * 2 * m * 128 * 4 : 0u);
    }
  }
}

TEST(SmallMPlan, SplitTilesOnlyWhenCtaBoundariesCutTiles) {
  // 64 tiles x 128 K blocks on 128 CTAs: two CTAs per tile, each cut in the middle.
  EXPECT_TRUE(PlanSmallM(Shape(8, 8192, 8192), 132, 128).split_tiles);
  // 64 CTAs: one whole tile each.
  EXPECT_FALSE(PlanSmallM(Shape(8, 8192, 8192), 132, 64).split_tiles);
  EXPECT_EQ(PlanSmallM(Shape(8, 8192, 8192), 132, 64).workspace_bytes, 0u);
  // One K block: tiles are never cut.
  EXPECT_FALSE(PlanSmallM(Shape(8, 8192, 64), 132).split_tiles);
  EXPECT_EQ(SmallMWorkspaceBytes(Shape(8, 64, 64), 132), 0u);
  // Forced sizes are clamped to the iteration count.
  EXPECT_EQ(PlanSmallM(Shape(8, 64, 200), 132, 99).ctas, 4);
  // Batches extend the iteration space.
  EXPECT_EQ(PlanSmallM(Shape(8, 256, 256, 3), 132).total_iters, 3 * 2 * 4);
}

}  // namespace
}  // namespace gemm::kernel::sm90
