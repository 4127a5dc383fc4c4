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
  EXPECT_TRUE(UseSmallM(Shape(128, 1, 1), 132));
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

TEST(SmallMPlan, SplitsFillTheGpuForDecodeShapes) {
  for (int64_t m : {1, 16, 32, 64, 128}) {
    for (auto [n, k] : {std::pair<int64_t, int64_t>{8192, 8192}, {28672, 8192}, {8192, 28672}}) {
      const SmallMPlan plan = PlanSmallM(Shape(m, n, k), 132);
      SCOPED_TRACE(::testing::Message() << m << "x" << n << "x" << k << " splits " << plan.splits);
      EXPECT_GE(plan.splits, 1);
      EXPECT_LE(plan.splits, plan.k_blocks);
      EXPECT_GE(plan.n_tiles * plan.splits, 132 * 0.8) << "too few CTAs to stream B on all SMs";
      EXPECT_EQ(plan.workspace_bytes,
                plan.splits > 1 ? static_cast<std::size_t>(plan.splits) * m * n * 4 : 0u);
    }
  }
}

TEST(SmallMPlan, SmallKAndForcedSplits) {
  EXPECT_EQ(PlanSmallM(Shape(8, 8192, 64), 132).splits, 1);  // one K block: nothing to split
  EXPECT_EQ(PlanSmallM(Shape(8, 8192, 8192), 132, 5).splits, 5);
  EXPECT_EQ(PlanSmallM(Shape(8, 64, 200), 132, 99).splits, 4);  // clamped to k_blocks
  EXPECT_EQ(SmallMWorkspaceBytes(Shape(8, 64, 64), 132), 0u);
}

}  // namespace
}  // namespace gemm::kernel::sm90
