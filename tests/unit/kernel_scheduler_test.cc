// CPU tests of the SM90 tile scheduler (kernel/src/scheduler.h): the grouped L2 order is a
// bijection onto the tile grid, groups walk M first, and problems/batch entries decode right.
#include <algorithm>
#include <random>
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
  TileDivisors div;
};

// The order GroupedOrder must produce, with plain 64-bit division.
void ReferenceOrder(int64_t r, int32_t m_clusters, int32_t n_blocks, int32_t group_m,
                    int32_t* m_cluster, int32_t* n_block) {
  const int64_t group = r / (int64_t{group_m} * n_blocks);
  const int64_t first_m = group * group_m;
  const int64_t rows = std::min<int64_t>(m_clusters - first_m, group_m);
  const int64_t in_group = r - group * group_m * n_blocks;
  *m_cluster = static_cast<int32_t>(first_m + in_group % rows);
  *n_block = static_cast<int32_t>(in_group / rows);
}

void Order(int64_t r, int32_t m, int32_t n, int32_t g, int32_t* mc, int32_t* nb) {
  GroupedOrder(static_cast<uint32_t>(r), m, n, g, MakeTileDivisors(m, n, g), mc, nb);
}

TEST(Scheduler, FastDivIsExact) {
  std::mt19937_64 rng(7);
  std::vector<uint32_t> divisors = {1,    2,    3,     5,     7,       8,          9,
                                    13,   16,   31,    64,    100,     127,        255,
                                    1000, 4097, 65535, 65536, 1000003, 0x7fffffffu};
  for (int i = 0; i < 200; ++i) divisors.push_back(1 + rng() % 0x7fffffffu);
  for (uint32_t d : divisors) {
    const FastDiv f = FastDiv::For(d);
    std::vector<uint32_t> ns = {0, 1, d - 1, d, d + 1, 0x7fffffffu, 0x7fffffffu - d};
    for (uint32_t k = 1; k < 64; ++k) ns.push_back(static_cast<uint32_t>(rng() % 0x80000000u));
    for (uint32_t mult = 1; mult < 1000 && uint64_t{mult} * d < 0x80000000u; mult *= 3) {
      ns.push_back(mult * d - 1);
      ns.push_back(mult * d);
    }
    for (uint32_t n : ns) {
      if (n >= 0x80000000u) continue;
      ASSERT_EQ(f.Div(n), n / d) << n << " / " << d;
    }
  }
}

TEST(Scheduler, GroupedOrderMatchesReference) {
  for (int32_t m : {1, 2, 3, 7, 8, 9, 17, 64, 100, 257}) {
    for (int32_t n : {1, 2, 5, 32, 112, 1000}) {
      for (int32_t g : {1, 2, 4, 8, 16, 32}) {
        const TileDivisors dv = MakeTileDivisors(m, n, g);
        for (int64_t r = 0; r < int64_t{m} * n; ++r) {
          int32_t mc, nb, rmc, rnb;
          GroupedOrder(static_cast<uint32_t>(r), m, n, g, dv, &mc, &nb);
          ReferenceOrder(r, m, n, g, &rmc, &rnb);
          ASSERT_EQ(mc, rmc) << r << " in " << m << "x" << n << " g=" << g;
          ASSERT_EQ(nb, rnb) << r << " in " << m << "x" << n << " g=" << g;
        }
      }
    }
  }
}

TEST(Scheduler, GroupedOrderIsABijection) {
  for (int32_t m : {1, 3, 8, 17, 64}) {
    for (int32_t n : {1, 2, 5, 32}) {
      for (int32_t g : {1, 4, 8}) {
        std::set<std::pair<int32_t, int32_t>> seen;
        for (int64_t r = 0; r < int64_t{m} * n; ++r) {
          int32_t mc, nb;
          Order(r, m, n, g, &mc, &nb);
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
  Order(0, 16, 4, 8, &mc, &nb);
  EXPECT_EQ(mc, 0);
  EXPECT_EQ(nb, 0);
  Order(1, 16, 4, 8, &mc, &nb);
  EXPECT_EQ(mc, 1);
  EXPECT_EQ(nb, 0);
  Order(8, 16, 4, 8, &mc, &nb);  // next column of the first group
  EXPECT_EQ(mc, 0);
  EXPECT_EQ(nb, 1);
  Order(32, 16, 4, 8, &mc, &nb);  // first tile of the second group
  EXPECT_EQ(mc, 8);
  EXPECT_EQ(nb, 0);
  Order(13 * 4 - 1, 13, 4, 8, &mc, &nb);  // last tile of the ragged last group (5 rows)
  EXPECT_EQ(mc, 12);
  EXPECT_EQ(nb, 3);
  Order(32 + 5, 13, 4, 8, &mc, &nb);  // the ragged group's second column starts after 5 rows
  EXPECT_EQ(mc, 8);
  EXPECT_EQ(nb, 1);
}

TEST(Scheduler, DecodesProblemsAndBatches) {
  // Problem 0: 2 x 3 tiles x 2 batch entries = 12 tiles; problem 1: 1 x 4 tiles.
  std::vector<P> probs = {{0, 2, 3, MakeTileDivisors(2, 3, 8)},
                          {12, 1, 4, MakeTileDivisors(1, 4, 8)}};
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
