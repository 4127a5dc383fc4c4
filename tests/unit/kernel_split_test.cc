// CPU tests of the SM90 tail split-K plan (kernel/src/sm90/sm90_split.h): every (tile, K block)
// is computed exactly once, only the last partial wave is split, owners come after every partial
// they wait for (a persistent schedule always finishes), and workspace slots are unique.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "sm90/sm90_split.h"

namespace gemm::kernel::sm90 {
namespace {

// Runs the persistent schedule of `plan` on `slots` clusters (cluster c takes units c, c+slots,
// ... in order); an owner finishes only once every partial of its tile is done. Returns whether
// all units finish.
bool ScheduleFinishes(const SplitPlan& plan, int64_t slots) {
  const int64_t units = TotalUnits(plan);
  std::vector<int64_t> next(slots);
  for (int64_t c = 0; c < slots; ++c) next[c] = c;
  std::map<int64_t, int> partials_done;  // tail index -> finished non-owner splits
  int64_t finished = 0;
  bool progress = true;
  while (finished < units && progress) {
    progress = false;
    for (int64_t c = 0; c < slots; ++c) {
      if (next[c] >= units) continue;
      const UnitWork w = DecodeUnit(next[c], plan);
      if (w.split >= 0 && IsOwner(w, plan) && partials_done[w.tail_index] < plan.splits - 1) {
        continue;  // spinning on the flags
      }
      if (w.split >= 0 && !IsOwner(w, plan)) ++partials_done[w.tail_index];
      next[c] += slots;
      ++finished;
      progress = true;
    }
  }
  return finished == units;
}

TEST(Sm90Split, EveryTileAndKBlockExactlyOnceAndOwnersLast) {
  for (int64_t tiles : {1, 2, 5, 26, 32, 64, 128, 131, 133, 224, 448, 1000}) {
    for (int32_t k_blocks : {1, 7, 16, 17, 64, 128, 448}) {
      for (int64_t slots : {1, 2, 60, 66, 132}) {
        const SplitPlan plan = PlanTailSplit(tiles, k_blocks, slots);
        SCOPED_TRACE(testing::Message() << "tiles " << tiles << " k_blocks " << k_blocks
                                        << " slots " << slots << " splits " << plan.splits);
        std::map<int64_t, std::vector<int>> covered;  // tile -> count per K block
        int64_t first_owner = -1, last_partial = -1;
        for (int64_t u = 0; u < TotalUnits(plan); ++u) {
          const UnitWork w = DecodeUnit(u, plan);
          ASSERT_GE(w.tile, 0);
          ASSERT_LT(w.tile, tiles);
          int32_t b = 0, e = 0;
          SplitKRange(w, plan, k_blocks, &b, &e);
          ASSERT_LE(0, b);
          ASSERT_LE(b, e);
          ASSERT_LE(e, k_blocks);
          auto& counts = covered[w.tile];
          counts.resize(k_blocks);
          for (int32_t kb = b; kb < e; ++kb) ++counts[kb];
          if (w.split >= 0) {
            ASSERT_GE(e - b, kMinSplitKBlocks);
            if (IsOwner(w, plan)) {
              if (first_owner < 0) first_owner = u;
            } else {
              last_partial = u;
            }
          }
        }
        ASSERT_EQ(static_cast<int64_t>(covered.size()), tiles);
        for (const auto& [tile, counts] : covered) {
          for (int c : counts) ASSERT_EQ(c, 1) << "tile " << tile;
        }
        if (plan.splits > 1) {
          EXPECT_LT(last_partial, first_owner);             // every partial precedes every owner
          EXPECT_LE(plan.tail_tiles * plan.splits, slots);  // the split wave is one wave
          EXPECT_LE(plan.splits, kMaxSplits);
          EXPECT_EQ(plan.dp_tiles % slots, 0);  // only the last, partial wave is split
        } else {
          EXPECT_EQ(plan.dp_tiles, tiles);
          EXPECT_EQ(plan.tail_tiles, 0);
        }
        EXPECT_TRUE(ScheduleFinishes(plan, slots));
      }
    }
  }
}

TEST(Sm90Split, BenchmarkShapes) {
  // M=128, N=8192, K=8192 with 128x128 tiles, one CTA per cluster, 132 SMs: 64 tiles on 132
  // slots, 128 K blocks -> 2 pieces each, 128 units.
  SplitPlan p = PlanTailSplit(64, 128, 132);
  EXPECT_EQ(p.dp_tiles, 0);
  EXPECT_EQ(p.tail_tiles, 64);
  EXPECT_EQ(p.splits, 2);
  // M=128, N=8192, K=8192 with 128x256 tiles: 32 tiles -> 4 pieces.
  EXPECT_EQ(PlanTailSplit(32, 128, 132).splits, 4);
  // M=512, N=28672, K=8192, 128x256 tiles in 2-CTA clusters: 224 cluster tiles on 66 slots =
  // 3 full waves + 26 tiles cut in 2 (3.5 waves instead of 4).
  p = PlanTailSplit(224, 128, 66);
  EXPECT_EQ(p.dp_tiles, 198);
  EXPECT_EQ(p.tail_tiles, 26);
  EXPECT_EQ(p.splits, 2);
  // 8192^3, 128x256 tiles, 2-CTA clusters: 1024 tiles, 34 in the last wave: no 2 pieces fit.
  EXPECT_EQ(PlanTailSplit(1024, 128, 66).splits, 1);
  // Full waves are never split; short K is never split.
  EXPECT_EQ(PlanTailSplit(264, 128, 132).splits, 1);
  EXPECT_EQ(PlanTailSplit(32, 15, 132).splits, 1);
  EXPECT_EQ(PlanTailSplit(32, 16, 132).splits, 2);
  // At most kMaxSplits pieces.
  EXPECT_EQ(PlanTailSplit(1, 4096, 132).splits, kMaxSplits);
}

// Times each (tile, K block) of a `tiles` x `k_blocks` launch is computed under `plan`.
std::map<int64_t, std::vector<int>> KBlockCounts(const SplitPlan& plan, int32_t k_blocks) {
  std::map<int64_t, std::vector<int>> counts;
  for (int64_t u = 0; u < TotalUnits(plan); ++u) {
    const UnitWork w = DecodeUnit(u, plan);
    int32_t b = 0, e = 0;
    SplitKRange(w, plan, k_blocks, &b, &e);
    EXPECT_LT(b, e) << "unit " << u << ": every piece gets at least one K block";
    auto& c = counts[w.tile];
    c.resize(k_blocks);
    for (int32_t kb = std::max(b, 0); kb < std::min(e, k_blocks); ++kb) ++c[kb];
  }
  return counts;
}

// A forced factor (TileConfig::tail_splits) cuts the last partial wave into exactly that many
// pieces (within kMaxSplits and the K blocks), even where the split units need more than one
// wave; every (tile, K block) is still computed once and the persistent schedule finishes.
TEST(Sm90Split, ForcedSplitCutsTheTailIntoThatManyPieces) {
  for (int64_t tiles : {1, 5, 64, 96, 131, 133, 448}) {
    for (int32_t k_blocks : {1, 3, 64, 128, 448}) {
      for (int64_t slots : {1, 66, 132}) {
        for (int32_t forced : {1, 2, 3, 4, 8, 9}) {
          const SplitPlan plan = PlanForcedTailSplit(tiles, k_blocks, slots, forced);
          SCOPED_TRACE(testing::Message() << "tiles " << tiles << " k_blocks " << k_blocks
                                          << " slots " << slots << " forced " << forced);
          const int64_t want = std::min<int64_t>({forced, kMaxSplits, k_blocks});
          if (tiles % slots == 0 || want < 2) {
            EXPECT_EQ(plan.splits, 1);
            EXPECT_EQ(plan.dp_tiles, tiles);
            EXPECT_EQ(plan.tail_tiles, 0);
          } else {
            EXPECT_EQ(plan.splits, want);
            EXPECT_EQ(plan.tail_tiles, tiles % slots);
            EXPECT_EQ(plan.dp_tiles % slots, 0);
          }
          const auto counts = KBlockCounts(plan, k_blocks);
          ASSERT_EQ(static_cast<int64_t>(counts.size()), tiles);
          for (const auto& [tile, c] : counts) {
            for (int n : c) ASSERT_EQ(n, 1) << "tile " << tile;
          }
          EXPECT_TRUE(ScheduleFinishes(plan, slots));
        }
      }
    }
  }
  // 0 leaves the plan to PlanTailSplit.
  const SplitPlan planned = PlanLaunchSplit(64, 128, 132, 0);
  EXPECT_EQ(planned.splits, PlanTailSplit(64, 128, 132).splits);
  EXPECT_EQ(PlanLaunchSplit(64, 128, 132, 1).splits, 1);
  EXPECT_EQ(PlanLaunchSplit(64, 128, 132, 3).splits, 3);
}

TEST(Sm90Split, PartialSlotsAreUniqueAndSized) {
  for (int cluster : {1, 2}) {
    const SplitPlan plan = PlanTailSplit(26, 128, 66);
    std::set<int64_t> slots;
    for (int64_t t = 0; t < plan.tail_tiles; ++t) {
      for (int32_t s = 0; s + 1 < plan.splits; ++s) {
        for (int r = 0; r < cluster; ++r) {
          const int64_t slot = PartialSlot(t, s, plan, r, cluster);
          ASSERT_GE(slot, 0);
          ASSERT_LT(slot, PartialSlots(plan, cluster));
          ASSERT_TRUE(slots.insert(slot).second);
        }
      }
    }
    EXPECT_EQ(static_cast<int64_t>(slots.size()), PartialSlots(plan, cluster));
    EXPECT_EQ(SplitFlagBytes(plan, cluster) % 256, 0);
    EXPECT_GE(SplitFlagBytes(plan, cluster), PartialSlots(plan, cluster) * 4);
    EXPECT_EQ(SplitWorkspaceBytes(plan, cluster, 128, 256),
              SplitFlagBytes(plan, cluster) + PartialSlots(plan, cluster) * 128 * 256 * 4);
  }
  EXPECT_EQ(SplitWorkspaceBytes(PlanTailSplit(264, 128, 132), 2, 128, 256), 0);
}

}  // namespace
}  // namespace gemm::kernel::sm90
