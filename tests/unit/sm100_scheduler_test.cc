// Tests of the SM100 persistent tile scheduler (kernel/src/sm100/sm100_scheduler.h): every tile
// of every problem is visited exactly once for any shape and grid, both CTAs of a 2-CTA cluster
// see the same sequence, and tiles come in grouped-L2 order (groups of consecutive M blocks share
// one N block).
#include "sm100/sm100_scheduler.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "sm100_test_util.h"

namespace gemm::kernel::sm100 {
namespace {

using testing::Shape;

using Wide = TileScheduler<256, 256, 64>;
using Narrow = TileScheduler<256, 128, 64>;

using TileKey = std::tuple<int32_t, int32_t, int32_t>;

// Runs all clusters of a grid; returns visit counts per tile (and checks K blocks).
template <class Sched>
std::map<TileKey, int> VisitAll(const std::vector<ProblemShape>& shapes, int32_t num_problems,
                                bool uniform, int32_t group_x, int32_t num_clusters) {
  std::map<TileKey, int> seen;
  for (int32_t c = 0; c < num_clusters; ++c) {
    Sched s(shapes.data(), num_problems, uniform, group_x, c, num_clusters);
    WorkTile t;
    int guard = 0;
    while (s.Next(&t) && ++guard < 1000000) {
      const ProblemShape& sh = shapes[uniform ? 0 : t.problem];
      EXPECT_EQ(t.num_k_blocks, (sh.k + 63) / 64);
      ++seen[{t.problem, t.block_x, t.block_y}];
    }
  }
  return seen;
}

template <class Sched, int kBX, int kBY>
void ExpectExactCover(const std::vector<ProblemShape>& shapes, int32_t num_problems, bool uniform,
                      int32_t group_x, int32_t num_clusters) {
  const auto seen = VisitAll<Sched>(shapes, num_problems, uniform, group_x, num_clusters);
  int64_t expected = 0;
  for (int32_t p = 0; p < num_problems; ++p) {
    const ProblemShape& sh = shapes[uniform ? 0 : p];
    const int32_t bx = (sh.rows_x + kBX - 1) / kBX, by = (sh.rows_y + kBY - 1) / kBY;
    expected += int64_t{bx} * by;
    for (int32_t x = 0; x < bx; ++x) {
      for (int32_t y = 0; y < by; ++y) {
        auto it = seen.find({p, x, y});
        ASSERT_NE(it, seen.end()) << "missing tile p=" << p << " x=" << x << " y=" << y;
        EXPECT_EQ(it->second, 1) << "tile visited twice p=" << p << " x=" << x << " y=" << y;
      }
    }
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), expected);
  EXPECT_EQ(Sched::TotalTiles(shapes.data(), num_problems, uniform), expected);
}

TEST(Sm100Scheduler, EveryTileOnceSingleProblem) {
  for (int32_t m : {1, 255, 256, 257, 1000, 4096, 8192 + 17}) {
    for (int32_t n : {1, 200, 256, 513, 4096}) {
      for (int32_t clusters : {1, 3, 37, 74, 500}) {
        for (int32_t gx : {1, 4, 16}) {
          ExpectExactCover<Wide, 256, 256>({Shape(m, n, 100)}, 1, true, gx, clusters);
        }
      }
    }
  }
}

TEST(Sm100Scheduler, EveryTileOnceStridedBatch) {
  for (int32_t batch : {1, 2, 7}) {
    for (int32_t clusters : {1, 5, 74}) {
      ExpectExactCover<Wide, 256, 256>({Shape(700, 300, 64)}, batch, true, 16, clusters);
      ExpectExactCover<Narrow, 256, 128>({Shape(4096, 100, 4096)}, batch, true, 16, clusters);
    }
  }
}

TEST(Sm100Scheduler, EveryTileOnceRandomGroups) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> dim(1, 3000);
  for (int iter = 0; iter < 40; ++iter) {
    const int32_t n = 1 + iter % 9;
    std::vector<ProblemShape> shapes;
    for (int32_t i = 0; i < n; ++i) shapes.push_back(Shape(dim(rng), dim(rng), dim(rng)));
    const int32_t clusters = 1 + static_cast<int32_t>(rng() % 80);
    ExpectExactCover<Wide, 256, 256>(shapes, n, false, 1 + static_cast<int32_t>(rng() % 16),
                                     clusters);
  }
}

TEST(Sm100Scheduler, BothCtasOfAPairAgree) {
  // 148 SMs (GB200, not 192) -> 74 clusters; CTAs 2c and 2c+1 form cluster c.
  const std::vector<ProblemShape> shapes = {Shape(3000, 5000, 512), Shape(256, 256, 64)};
  const int32_t grid = 148;
  for (int32_t block = 0; block < grid; block += 2) {
    EXPECT_EQ(ClusterIdOf(block), ClusterIdOf(block + 1));
    Wide s0(shapes.data(), 2, false, 16, ClusterIdOf(block), grid / 2);
    Wide s1(shapes.data(), 2, false, 16, ClusterIdOf(block + 1), grid / 2);
    WorkTile a, b;
    bool more0, more1;
    do {
      more0 = s0.Next(&a);
      more1 = s1.Next(&b);
      ASSERT_EQ(more0, more1);
      if (more0) {
        EXPECT_EQ(a.problem, b.problem);
        EXPECT_EQ(a.block_x, b.block_x);
        EXPECT_EQ(a.block_y, b.block_y);
        EXPECT_EQ(a.num_k_blocks, b.num_k_blocks);
      }
    } while (more0);
  }
}

TEST(Sm100Scheduler, GroupedL2Order) {
  // 64 x 8 cluster tiles, group of 16 X blocks: linear tiles 0..15 share Y block 0 and cover X
  // blocks 0..15; 16..31 are Y block 1 of the same X blocks; after 16*8 tiles the next group.
  const std::vector<ProblemShape> shapes = {Shape(64 * 256, 8 * 256, 64)};
  Wide s(shapes.data(), 1, true, 16, 0, 1);
  WorkTile t;
  for (int32_t i = 0; i < 64 * 8; ++i) {
    ASSERT_TRUE(s.Next(&t));
    const int32_t group = i / (16 * 8);
    EXPECT_EQ(t.block_x, group * 16 + i % 16);
    EXPECT_EQ(t.block_y, (i % (16 * 8)) / 16);
  }
  EXPECT_FALSE(s.Next(&t));
}

TEST(Sm100Scheduler, PartialLastGroup) {
  // 20 X blocks, group 16: the last group has 4 X blocks and still walks all Y blocks.
  const std::vector<ProblemShape> shapes = {Shape(20 * 256, 3 * 256, 64)};
  Wide s(shapes.data(), 1, true, 16, 0, 1);
  WorkTile t;
  for (int32_t i = 0; i < 16 * 3; ++i) ASSERT_TRUE(s.Next(&t));
  for (int32_t i = 0; i < 4 * 3; ++i) {
    ASSERT_TRUE(s.Next(&t));
    EXPECT_EQ(t.block_x, 16 + i % 4);
    EXPECT_EQ(t.block_y, i / 4);
  }
  EXPECT_FALSE(s.Next(&t));
}

TEST(Sm100Scheduler, MoreClustersThanTiles) {
  const std::vector<ProblemShape> shapes = {Shape(10, 10, 10)};
  Wide first(shapes.data(), 1, true, 16, 0, 74);
  WorkTile t;
  EXPECT_TRUE(first.Next(&t));
  EXPECT_FALSE(first.Next(&t));
  Wide idle(shapes.data(), 1, true, 16, 1, 74);
  EXPECT_FALSE(idle.Next(&t));
}

// 2 M-waves: 512 x 256 cluster tiles.
TEST(Sm100Scheduler, EveryTileOnceTwoMWaves) {
  using Wide2 = TileScheduler<512, 256, 64>;
  for (int32_t m : {1, 511, 512, 513, 8192 + 300}) {
    for (int32_t clusters : {1, 7, 74}) {
      ExpectExactCover<Wide2, 512, 256>({Shape(m, 4096, 4096)}, 1, true, 16, clusters);
      ExpectExactCover<Wide2, 512, 256>({Shape(m, 1000, 64)}, 3, true, 16, clusters);
    }
  }
}

// TileAt(linear) is what the static round robin walks (Next) and what Cluster Launch Control asks
// for by cluster id, in any order.
TEST(Sm100Scheduler, TileAtMatchesNext) {
  std::mt19937 rng(77);
  std::uniform_int_distribution<int32_t> dim(1, 2000);
  for (int iter = 0; iter < 30; ++iter) {
    const int32_t n = 1 + iter % 5;
    std::vector<ProblemShape> shapes;
    for (int32_t i = 0; i < n; ++i) {
      shapes.push_back(Shape(dim(rng), dim(rng), dim(rng)));
      shapes.back().k_splits = 1 + static_cast<int32_t>(rng() % 3);
    }
    const bool uniform = iter % 2 == 0;
    const int32_t problems = uniform ? 1 + iter % 3 : n;
    Wide seq(shapes.data(), problems, uniform, 4, 0, 1);
    const int64_t total = Wide::TotalTiles(shapes.data(), problems, uniform);
    std::vector<WorkTile> by_next;
    WorkTile t;
    while (seq.Next(&t)) by_next.push_back(t);
    ASSERT_EQ(static_cast<int64_t>(by_next.size()), total);
    // Random order of ids on one scheduler object (the cursor must cope with going back).
    std::vector<int64_t> ids(static_cast<std::size_t>(total));
    for (int64_t i = 0; i < total; ++i) ids[static_cast<std::size_t>(i)] = i;
    std::shuffle(ids.begin(), ids.end(), rng);
    Wide any(shapes.data(), problems, uniform, 4, 0, 1);
    for (int64_t id : ids) {
      ASSERT_TRUE(any.TileAt(id, &t));
      const WorkTile& e = by_next[static_cast<std::size_t>(id)];
      EXPECT_EQ(t.problem, e.problem);
      EXPECT_EQ(t.block_x, e.block_x);
      EXPECT_EQ(t.block_y, e.block_y);
      EXPECT_EQ(t.split, e.split);
      EXPECT_EQ(t.k_block_begin, e.k_block_begin);
      EXPECT_EQ(t.num_k_blocks, e.num_k_blocks);
    }
    EXPECT_FALSE(any.TileAt(total, &t));
    EXPECT_FALSE(any.TileAt(-1, &t));
  }
}

}  // namespace
}  // namespace gemm::kernel::sm100
