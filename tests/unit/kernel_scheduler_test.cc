// CPU tests of the SM90 tile scheduler (kernel/src/scheduler.h): the grouped L2 order is a
// bijection onto the tile grid, groups walk M first, and problems/batch entries decode right.
#include <set>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler.h"

namespace gemm::kernel {
namespace {

struct P {
  int64_t tile_begin;
  int32_t m_clusters, n_blocks;
};

TEST(Scheduler, GroupedOrderIsABijection) {
  for (int32_t m : {1, 3, 8, 17, 64}) {
    for (int32_t n : {1, 2, 5, 32}) {
      for (int32_t g : {1, 4, 8}) {
        std::set<std::pair<int32_t, int32_t>> seen;
        for (int64_t r = 0; r < int64_t{m} * n; ++r) {
          int32_t mc, nb;
          GroupedOrder(r, m, n, g, &mc, &nb);
          ASSERT_GE(mc, 0);
          ASSERT_LT(mc, m);
          ASSERT_GE(nb, 0);
          ASSERT_LT(nb, n);
          seen.insert({mc, nb});
        }
        EXPECT_EQ(seen.size(), static_cast<std::size_t>(m) * n) << m << "x" << n << " g=" << g;
      }
    }
  }
}

TEST(Scheduler, GroupWalksDownMFirst) {
  int32_t mc, nb;
  GroupedOrder(0, 16, 4, 8, &mc, &nb);
  EXPECT_EQ(mc, 0);
  EXPECT_EQ(nb, 0);
  GroupedOrder(1, 16, 4, 8, &mc, &nb);
  EXPECT_EQ(mc, 1);
  EXPECT_EQ(nb, 0);
  GroupedOrder(8, 16, 4, 8, &mc, &nb);  // next column of the first group
  EXPECT_EQ(mc, 0);
  EXPECT_EQ(nb, 1);
  GroupedOrder(32, 16, 4, 8, &mc, &nb);  // first tile of the second group
  EXPECT_EQ(mc, 8);
  EXPECT_EQ(nb, 0);
  GroupedOrder(16 * 4 - 1, 13, 4, 8, &mc, &nb);  // ragged last group (5 rows)
}

TEST(Scheduler, DecodesProblemsAndBatches) {
  // Problem 0: 2 x 3 tiles x 2 batch entries = 12 tiles; problem 1: 1 x 4 tiles.
  std::vector<P> probs = {{0, 2, 3}, {12, 1, 4}};
  std::set<std::tuple<int, int, int, int>> seen;
  for (int64_t t = 0; t < 16; ++t) {
    TileCoord c = DecodeTile(t, probs, 2, 8);
    if (t < 12) {
      EXPECT_EQ(c.problem, 0);
      EXPECT_EQ(c.batch, t / 6);
    } else {
      EXPECT_EQ(c.problem, 1);
      EXPECT_EQ(c.batch, 0);
      EXPECT_EQ(c.m_cluster, 0);
      EXPECT_EQ(c.n_block, t - 12);
    }
    seen.insert({c.problem, c.batch, c.m_cluster, c.n_block});
  }
  EXPECT_EQ(seen.size(), 16u);
}

}  // namespace
}  // namespace gemm::kernel
