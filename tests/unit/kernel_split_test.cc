// CPU tests of the SM90 tail split-K and stream-K plans (kernel/src/sm90/sm90_split.h): every
// (tile, K block) is computed exactly once, only the last partial wave is split, owners never
// wait on a unit that cannot run (a persistent schedule always finishes), and owners read
// exactly the unique workspace slots their tiles' partials went to.
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
// ... in order); an owner finishes only once every slot group it reads has been written, and a
// stream-K unit past its share's end finishes at once. Returns whether all units finish.
bool ScheduleFinishes(const SplitPlan& plan, int64_t slots) {
  const int64_t units = TotalUnits(plan);
  std::vector<int64_t> next(slots);
  for (int64_t c = 0; c < slots; ++c) next[c] = c;
  std::set<int64_t> written;  // slot groups whose partials are done
  int64_t finished = 0;
  bool progress = true;
  while (finished < units && progress) {
    progress = false;
    for (int64_t c = 0; c < slots; ++c) {
      if (next[c] >= units) continue;
      const UnitWork w = DecodeUnit(next[c], plan);
      int32_t first = 0;
      int32_t count = 0;
      ReadGroups(w, plan, &first, &count);
      bool ready = true;
      for (int32_t g = 0; g < count; ++g) ready = ready && written.count(first + g) > 0;
      if (!ready) continue;  // spinning on the flags
      if (w.split >= 0 && !IsOwner(w, plan)) written.insert(WriteGroup(w, plan));
      next[c] += slots;
      ++finished;
      progress = true;
    }
  }
  return finished == units;
}

// Every owner reads exactly the slot groups its tile's non-owner units write, and no two
// non-owner units (nor CTAs of a cluster) share a workspace slot.
void ExpectSlotsMatch(const SplitPlan& plan, int cluster) {
  std::map<int64_t, std::set<int64_t>> written;  // tile -> slot groups
  std::map<int64_t, std::set<int64_t>> read;
  std::set<int64_t> slots;
  for (int64_t u = 0; u < TotalUnits(plan); ++u) {
    const UnitWork w = DecodeUnit(u, plan);
    if (w.split < 0) continue;  // a whole tile (or a stream-K unit past its share's end)
    if (IsOwner(w, plan)) {
      int32_t first = 0;
      int32_t count = 0;
      ReadGroups(w, plan, &first, &count);
      for (int32_t g = 0; g < count; ++g) read[w.tile].insert(first + g);
      read[w.tile];  // an owner with nothing to read still has an entry
      continue;
    }
    written[w.tile].insert(WriteGroup(w, plan));
    for (int r = 0; r < cluster; ++r) {
      const int64_t slot = PartialSlot(WriteGroup(w, plan), r, cluster);
      ASSERT_GE(slot, 0);
      ASSERT_LT(slot, PartialSlots(plan, cluster));
      ASSERT_TRUE(slots.insert(slot).second) << "slot " << slot;
    }
  }
  for (const auto& [tile, groups] : written) {
    ASSERT_TRUE(read.count(tile)) << "tile " << tile << " has partials and no owner";
    EXPECT_EQ(read[tile], groups) << "tile " << tile;
  }
  for (const auto& [tile, groups] : read) {
    EXPECT_EQ(written[tile], groups) << "tile " << tile;
  }
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
        ExpectSlotsMatch(plan, 2);
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
    if (w.share >= 0 && b == e) continue;  // past its share's end
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
  const SplitPlan planned = PlanLaunchSplit(64, 128, 132, 0, true);
  EXPECT_EQ(planned.splits, PlanTailSplit(64, 128, 132).splits);
  EXPECT_EQ(PlanLaunchSplit(64, 128, 132, 1, true).splits, 1);
  EXPECT_EQ(PlanLaunchSplit(64, 128, 132, 3, true).splits, 3);
  // kStreamKSplits asks for stream-K, which only launches whose tiles share one K can run.
  EXPECT_TRUE(IsStreamK(PlanLaunchSplit(224, 64, 132, kStreamKSplits, true)));
  const SplitPlan mixed_k = PlanLaunchSplit(224, 64, 132, kStreamKSplits, false);
  EXPECT_FALSE(IsStreamK(mixed_k));
  EXPECT_EQ(mixed_k.splits, PlanTailSplit(224, 64, 132).splits);
}

// Stream-K shares the last partial wave's K blocks evenly: every (tile, K block) once, whole
// waves untouched, shares within one K block of each other and never under kMinSplitKBlocks,
// each share's only non-owner part its first, owners reading exactly their tiles' partials,
// and the persistent schedule finishing.
TEST(Sm90Split, StreamKSharesTheTailEvenly) {
  for (int64_t tiles : {1, 5, 64, 92, 131, 133, 224, 300, 448}) {
    for (int32_t k_blocks : {1, 7, 8, 16, 64, 128, 448}) {
      for (int64_t slots : {1, 2, 60, 66, 132}) {
        const SplitPlan plan = PlanStreamK(tiles, k_blocks, slots);
        SCOPED_TRACE(testing::Message()
                     << "tiles " << tiles << " k_blocks " << k_blocks << " slots " << slots);
        const int64_t tail = tiles % slots;
        if (tail == 0 || tail * k_blocks < slots * kMinSplitKBlocks) {
          EXPECT_FALSE(Exchanges(plan));
          EXPECT_EQ(plan.dp_tiles, tiles);
          EXPECT_EQ(TotalUnits(plan), tiles);
          continue;
        }
        ASSERT_TRUE(IsStreamK(plan));
        EXPECT_EQ(plan.tail_tiles, tail);
        EXPECT_EQ(plan.dp_tiles, tiles - tail);
        EXPECT_EQ(plan.sk_clusters, slots);
        EXPECT_EQ(TotalUnits(plan) % slots, 0);
        const auto counts = KBlockCounts(plan, k_blocks);
        ASSERT_EQ(static_cast<int64_t>(counts.size()), tiles);
        for (const auto& [tile, c] : counts) {
          for (int n : c) ASSERT_EQ(n, 1) << "tile " << tile;
        }
        std::vector<int64_t> share_blocks(slots);
        std::vector<bool> ended(slots);
        for (int64_t u = plan.dp_tiles; u < TotalUnits(plan); ++u) {
          const UnitWork w = DecodeUnit(u, plan);
          ASSERT_EQ(w.share, (u - plan.dp_tiles) % slots);
          const bool first_part = u - plan.dp_tiles < slots;
          if (w.kb_begin == w.kb_end) {
            ended[w.share] = true;
            continue;
          }
          ASSERT_FALSE(ended[w.share]) << "unit " << u << " after its share's end";
          share_blocks[w.share] += w.kb_end - w.kb_begin;
          if (!IsOwner(w, plan)) EXPECT_TRUE(first_part) << "unit " << u;
        }
        const auto [lo, hi] = std::minmax_element(share_blocks.begin(), share_blocks.end());
        EXPECT_LE(*hi - *lo, 1);
        EXPECT_GE(*lo, kMinSplitKBlocks);
        EXPECT_TRUE(ScheduleFinishes(plan, slots));
        for (int cluster : {1, 2}) ExpectSlotsMatch(plan, cluster);
      }
    }
  }
}

TEST(Sm90Split, StreamKBenchmarkShape) {
  // M = 368, N = 14336, K = 4096 on swap-AB tiles 128 x 192: 224 tiles of 64 K blocks on 132
  // SMs. One whole wave, then 92 tiles' 5,888 K blocks in 132 shares of 44-45: 1.70 tile times
  // instead of 2.
  const SplitPlan p = PlanStreamK(224, 64, 132);
  EXPECT_EQ(p.dp_tiles, 132);
  EXPECT_EQ(p.tail_tiles, 92);
  EXPECT_EQ(p.sk_units, 2);
  EXPECT_EQ(ShareBegin(p, 1), 44);
  EXPECT_EQ(ShareBegin(p, 132), 92 * 64);
  EXPECT_EQ(ShareOf(p, 43), 0);
  EXPECT_EQ(ShareOf(p, 44), 1);
  EXPECT_EQ(ShareOf(p, 92 * 64 - 1), 131);
  // Share 1 holds K blocks 44-88 (89 is share 2's): the end of tile 0 (a partial for share 0's
  // owner) and the start of tile 1, which it owns.
  const UnitWork a = DecodeUnit(132 + 1, p), b = DecodeUnit(132 + 132 + 1, p);
  EXPECT_EQ(a.tile, 132);
  EXPECT_EQ(a.kb_begin, 44);
  EXPECT_EQ(a.kb_end, 64);
  EXPECT_FALSE(IsOwner(a, p));
  EXPECT_EQ(b.tile, 133);
  EXPECT_EQ(b.kb_begin, 0);
  EXPECT_EQ(b.kb_end, 25);
  EXPECT_TRUE(IsOwner(b, p));
  EXPECT_EQ(SplitWorkspaceBytes(p, 1, 128, 192), 768 + 132 * 128 * 192 * 4);
}

TEST(Sm90Split, PartialSlotsAreUniqueAndSized) {
  for (int cluster : {1, 2}) {
    const SplitPlan plan = PlanTailSplit(26, 128, 66);
    ExpectSlotsMatch(plan, cluster);
    EXPECT_EQ(PartialSlots(plan, cluster), 26 * (plan.splits - 1) * cluster);
    EXPECT_EQ(SplitFlagBytes(plan, cluster) % 256, 0);
    EXPECT_GE(SplitFlagBytes(plan, cluster), PartialSlots(plan, cluster) * 4);
    EXPECT_EQ(SplitWorkspaceBytes(plan, cluster, 128, 256),
              SplitFlagBytes(plan, cluster) + PartialSlots(plan, cluster) * 128 * 256 * 4);
  }
  EXPECT_EQ(SplitWorkspaceBytes(PlanTailSplit(264, 128, 132), 2, 128, 256), 0);
}

}  // namespace
}  // namespace gemm::kernel::sm90
