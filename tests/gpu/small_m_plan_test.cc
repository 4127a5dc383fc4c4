// CPU tests of the small-M kernel's launch plan (tile height, split-K, workspace): pure host
// arithmetic, runs without a GPU.
#include <gtest/gtest.h>

#include <limits>

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

TEST(SmallMPlan, UseSmallMCoversDecodeRowsOfLightWeightsOnly) {
  EXPECT_TRUE(UseSmallM(Shape(1, 4096, 4096)));
  EXPECT_TRUE(UseSmallM(Shape(16, 1, 1)));
  EXPECT_TRUE(UseSmallM(Shape(16, 1024, 8192, 4)));  // exactly 64 MiB of weights
  // The WGMMA kernel's decode tiles stream heavier weights faster.
  EXPECT_FALSE(UseSmallM(Shape(16, 1024, 8192 + 8, 4)));
  EXPECT_FALSE(UseSmallM(Shape(1, 8192, 8192)));
  EXPECT_FALSE(UseSmallM(Shape(1, 4096, 4096, 5)));
  EXPECT_FALSE(UseSmallM(Shape(17, 4096, 4096)));  // and every M above 16
  EXPECT_FALSE(UseSmallM(Shape(129, 8192, 8192)));
  EXPECT_FALSE(UseSmallM(Shape(0, 8192, 8192)));
  // No overflow: the largest int64 shape is far past the bound.
  const int64_t huge = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(UseSmallM(1, huge, huge, huge));
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

TEST(SmallMPlan, TileAlignedGridsReplaceStreamKWhereTheyFillTheSms) {
  const SmallMClusterLimits limits{.of2 = 66, .of4 = 33, .of8 = 16};
  auto plan = [&](int64_t m, int64_t n, int64_t k, int64_t batch = 1) {
    return PlanSmallM(Shape(m, n, k, batch), 132, 0, &limits);
  };
  // 64 tiles x 2 = 128 CTAs (97% of 132): clusters of 2 split K, no fixup, no workspace.
  for (int64_t m : {1, 16}) {
    const SmallMPlan p = plan(m, 8192, 8192);
    EXPECT_EQ(p.cluster_k, 2);
    EXPECT_EQ(p.ctas, 128);
    EXPECT_FALSE(p.split_tiles);
    EXPECT_EQ(p.workspace_bytes, 0u);
  }
  EXPECT_EQ(plan(16, 4096, 8192).cluster_k, 4);        // 32 x 4
  EXPECT_EQ(plan(16, 2048, 8192).cluster_k, 8);        // 16 x 8
  EXPECT_EQ(plan(16, 4096, 8192, 2).cluster_k, 2);     // 2 batch entries x 32 tiles x 2
  EXPECT_EQ(plan(16, 8192 - 100, 8192).cluster_k, 2);  // N cut inside the last tile
  // 128 tiles: one whole tile per CTA, no clusters and no split.
  const SmallMPlan whole = plan(16, 16384, 4096);
  EXPECT_EQ(whole.cluster_k, 1);
  EXPECT_EQ(whole.ctas, 128);
  EXPECT_FALSE(whole.split_tiles);
  // Stream-K stays where no multiple fills 95% of the SMs (224 tiles; 60 x 2 = 120 is 91%).
  EXPECT_EQ(plan(16, 28672, 8192).cluster_k, 1);
  EXPECT_EQ(plan(16, 28672, 8192).ctas, 132);
  EXPECT_EQ(plan(16, 60 * 128, 8192).cluster_k, 1);
  EXPECT_TRUE(plan(16, 60 * 128, 8192).split_tiles);
  // With B [K,N] (Shape's default), the 4 idle SMs' share of a larger B (8192 x 28672: 14 MB)
  // costs more than the fixup; with B [N,K] the clusters still win.
  EXPECT_EQ(plan(16, 8192, 28672).cluster_k, 1);
  EXPECT_EQ(plan(16, 8192, 28672).ctas, 132);
  EXPECT_EQ(plan(16, 16384, 16384).ctas, 132);
  StridedBatch nk = Shape(16, 8192, 28672);
  nk.problem.b_layout = BLayout::kNK;
  EXPECT_EQ(PlanSmallM(nk, 132, 0, &limits).cluster_k, 2);
  nk.problem.n = 16384;
  EXPECT_EQ(PlanSmallM(nk, 132, 0, &limits).ctas, 128);  // whole tiles
  // An exact fill idles no SM: 66 tiles x 2 = 132 CTAs, whatever the size of B.
  EXPECT_EQ(plan(16, 66 * 128, 65536).cluster_k, 2);
  // Too few K blocks for the pieces (8192 x 256: 4 blocks, 2 pieces need 8).
  EXPECT_EQ(plan(16, 8192, 256).cluster_k, 1);
  // Only the 16-row tile has the cluster path.
  EXPECT_EQ(plan(17, 8192, 8192).cluster_k, 1);
  // Clusters that cannot all be resident at once: stream-K.
  const SmallMClusterLimits few{.of2 = 63, .of4 = 30, .of8 = 15};
  EXPECT_EQ(PlanSmallM(Shape(16, 8192, 8192), 132, 0, &few).cluster_k, 1);
  EXPECT_EQ(PlanSmallM(Shape(16, 4096, 8192), 132, 0, &few).cluster_k, 1);
  // A forced grid and a plan without limits (the workspace query) are stream-K.
  EXPECT_EQ(PlanSmallM(Shape(16, 8192, 8192), 132, 132, &limits).cluster_k, 1);
  EXPECT_EQ(PlanSmallM(Shape(16, 8192, 8192), 132).cluster_k, 1);
  // The workspace query covers every plan the launch may pick.
  for (int64_t n : {2048, 4096, 8192, 16384, 28672}) {
    EXPECT_GE(SmallMWorkspaceBytes(Shape(16, n, 8192), 132), plan(16, n, 8192).workspace_bytes);
  }
}

}  // namespace
}  // namespace gemm::kernel::sm90
