// Tests of the SM100 small-M split-K pieces: the split choice and workspace sizing
// (kernel/src/sm100/sm100_split.h) and the scheduler's split work units
// (kernel/src/sm100/sm100_scheduler.h): every (tile, split) exactly once, and each tile's splits
// partition its K blocks into contiguous, non-empty ranges.
#include "sm100/sm100_split.h"

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "sm100/sm100_scheduler.h"
#include "sm100_test_util.h"

namespace gemm::kernel::sm100 {
namespace {

using testing::Shape;

using Swap = TileScheduler<256, 128, 64>;

TEST(Sm100Split, ChooseKSplits) {
  // Decode on a GB200 (148 SMs -> 74 clusters): N = 4096 gives 16 tiles; K = 4096 is 64 blocks.
  EXPECT_EQ(ChooseKSplits(16, 74, 64, 16), 4);
  // Enough tiles already: no split.
  EXPECT_EQ(ChooseKSplits(74, 74, 64, 16), 1);
  EXPECT_EQ(ChooseKSplits(200, 74, 64, 16), 1);
  // Short K: at least 4 K blocks per split.
  EXPECT_EQ(ChooseKSplits(1, 74, 8, 16), 2);
  EXPECT_EQ(ChooseKSplits(1, 74, 7, 16), 1);
  // Capped by the workspace and by kMaxKSplits.
  EXPECT_EQ(ChooseKSplits(1, 74, 1000, 3), 3);
  EXPECT_EQ(ChooseKSplits(1, 74, 1000, 100), kMaxKSplits);
  EXPECT_EQ(ChooseKSplits(4, 74, 1000, 0), 1);
}

TEST(Sm100Split, Workspace) {
  EXPECT_EQ(SplitPitch(1), 4);
  EXPECT_EQ(SplitPitch(4096), 4096);
  EXPECT_EQ(SplitPitch(4097), 4100);
  EXPECT_EQ(SplitSliceBytes(16, 4096), 16u * 4096u * 4u);
  EXPECT_EQ(SplitWorkspaceBytes(16, 4096), 16u * 16u * 4096u * 4u);  // 16 splits fit in 64 MiB
  // 128 x 65536 x 4 B = 32 MiB per slice: only 2 fit.
  EXPECT_EQ(SplitWorkspaceBytes(128, 65536), 2u * 128u * 65536u * 4u);
  EXPECT_EQ(MaxSplitsFor(SplitWorkspaceBytes(16, 4096), 16, 4096), kMaxKSplits);
  EXPECT_EQ(MaxSplitsFor(3 * SplitSliceBytes(7, 100) + 5, 7, 100), 3);
  EXPECT_EQ(MaxSplitsFor(0, 7, 100), 0);
}

TEST(Sm100Split, SchedulerCoversEveryTileAndKBlockOnce) {
  for (int32_t k : {64, 100, 64 * 7, 4096, 4096 + 64 * 3 + 5}) {
    for (int32_t splits : {1, 2, 3, 4, 16, 200}) {
      for (int32_t clusters : {1, 7, 74}) {
        const std::vector<ProblemShape> shapes = {Shape(4096, 16, k, splits)};
        std::map<std::tuple<int32_t, int32_t, int32_t>, int> seen;  // (x, y, split)
        std::map<std::pair<int32_t, int32_t>, std::vector<int>> k_hits;
        const int32_t k_blocks = (k + 63) / 64;
        for (int32_t c = 0; c < clusters; ++c) {
          Swap s(shapes.data(), 1, true, 16, c, clusters);
          WorkTile t;
          while (s.Next(&t)) {
            ++seen[{t.block_x, t.block_y, t.split}];
            ASSERT_GE(t.num_k_blocks, 1);
            auto& hits = k_hits[{t.block_x, t.block_y}];
            hits.resize(k_blocks);
            for (int32_t b = t.k_block_begin; b < t.k_block_begin + t.num_k_blocks; ++b) {
              ASSERT_LT(b, k_blocks);
              ++hits[b];
            }
          }
        }
        const int32_t used = Swap::SplitsOf(shapes[0]);
        EXPECT_EQ(used, splits < k_blocks ? splits : k_blocks);
        EXPECT_EQ(seen.size(), static_cast<std::size_t>(16 * 1 * used));
        for (const auto& [key, n] : seen) EXPECT_EQ(n, 1);
        EXPECT_EQ(k_hits.size(), 16u);
        for (const auto& [tile, hits] : k_hits) {
          for (int32_t b = 0; b < k_blocks; ++b) EXPECT_EQ(hits[b], 1) << "K block " << b;
        }
      }
    }
  }
}

TEST(Sm100Split, NoSplitKeepsWholeK) {
  const std::vector<ProblemShape> shapes = {Shape(1000, 1000, 1000, 1)};
  TileScheduler<256, 256, 64> s(shapes.data(), 1, true, 16, 0, 1);
  WorkTile t;
  while (s.Next(&t)) {
    EXPECT_EQ(t.split, 0);
    EXPECT_EQ(t.k_block_begin, 0);
    EXPECT_EQ(t.num_k_blocks, 16);
  }
}

}  // namespace
}  // namespace gemm::kernel::sm100
