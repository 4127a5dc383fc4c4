// CPU tests of the SM90 launch heuristics (kernel/src/heuristics_sm90.h).
#include <vector>

#include "gtest/gtest.h"
#include "heuristics_sm90.h"
#include "sm90/sm90_split.h"    // kMaxSplits
#include "sm90/sm90_variant.h"  // TileVariant

namespace gemm::kernel::sm90 {
namespace {

constexpr int kH100Sms = 132;
constexpr int kSmemOptin = kSm90SmemOptin;  // H100/H200 opt-in shared memory per block

TEST(HeuristicsSm90, SharedMemoryFitsTheDevice) {
  for (int bn : {128, 256}) {
    for (bool f32 : {false, true}) {
      TileConfig cfg;
      cfg.block_n = bn;
      cfg.stages = MaxStages(128, bn, f32, kSmemOptin);
      EXPECT_LE(SharedMemoryBytes(cfg, f32), kSmemOptin);
      EXPECT_GE(cfg.stages, bn == 256 ? 4 : 6);
      cfg.stages += 1;
      EXPECT_GT(SharedMemoryBytes(cfg, f32), kSmemOptin) << "not the deepest pipeline";
    }
  }
}

// The swap-AB widths 192 and 208 stage their epilogue in the last pipeline slot (EpilogueInSlot),
// which gives them five slots like the narrower widths; 224 and 240 keep four.
TEST(HeuristicsSm90, InSlotEpilogueGivesWidths192And208FiveSlots) {
  for (int w : kSwapWidths) {
    TileConfig cfg;
    cfg.block_m = 128;
    cfg.block_n = w;
    cfg.swap_ab = true;
    cfg.stages = MaxStages(128, w, false, kSmemOptin);
    EXPECT_EQ(cfg.stages, w <= 208 ? 5 : 4) << "width " << w;
    EXPECT_EQ(EpilogueInSlot(128, w), w == 192 || w == 208) << "width " << w;
    EXPECT_LE(SharedMemoryBytes(cfg, false), kSmemOptin) << "width " << w;
  }
  // No epilogue buffers in their carve-up: slack, five slots, barriers and the unit record.
  EXPECT_EQ(Sm90SmemBytes(128, 192, 5), 1024 + 5 * (128 + 192) * 128 + 5 * 16 + 32);
  EXPECT_EQ(Sm90SmemBytes(128, 176, 5), 1024 + 5 * (128 + 176) * 128 + 32 * 1024 + 5 * 16 + 32);
}

TEST(HeuristicsSm90, LargeSquareUsesWideTiles) {
  ShapeQuery q;
  q.m = q.n = q.k = 8192;
  const TileConfig cfg = ChoosePlainConfig(q, kH100Sms, kSmemOptin);
  EXPECT_EQ(cfg.block_m * cfg.block_n, 128 * 256);
  EXPECT_EQ(cfg.cluster_m, 2);
  EXPECT_EQ(cfg.stages, 4);
}

TEST(HeuristicsSm90, SingleRowOfTilesAvoidsClusters) {
  ShapeQuery q;
  q.m = 100, q.n = 8192, q.k = 8192;
  EXPECT_EQ(ChoosePlainConfig(q, kH100Sms, kSmemOptin).cluster_m, 1);
}

TEST(HeuristicsSm90, OneWaveOfTilesAvoidsClusters) {
  // 2048^3: 128 tiles of 128x256 on 132 SMs, each CTA runs one: no cluster (measured 2.5%
  // faster); 8192^3 (16 waves) and a single wave with a long K (512 x 8192 x 28672) keep the
  // multicast pair.
  ShapeQuery q;
  q.m = q.n = q.k = 2048;
  TileConfig cfg = ChoosePlainConfig(q, kH100Sms, kSmemOptin);
  EXPECT_EQ(cfg.block_m * cfg.block_n, 128 * 256);
  EXPECT_EQ(cfg.cluster_m, 1);
  q.m = q.n = q.k = 8192;
  EXPECT_EQ(ChoosePlainConfig(q, kH100Sms, kSmemOptin).cluster_m, 2);
  q.m = 512, q.n = 8192, q.k = 28672;
  cfg = ChoosePlainConfig(q, kH100Sms, kSmemOptin);
  EXPECT_EQ(cfg.block_m * cfg.block_n, 128 * 256);
  EXPECT_EQ(cfg.cluster_m, 2);
  q.k = 8192;
  EXPECT_EQ(ChoosePlainConfig(q, kH100Sms, kSmemOptin).cluster_m, 1);
}

TEST(HeuristicsSm90, DecodeRowsGetTheWidestTile) {
  // M <= 64: memory bound, 64-row tiles without a cluster; 128 columns while those tiles fit
  // one wave (N = 8192: 64 tiles), else 256 (N = 28672: 224 tiles of 128 would not).
  for (int64_t m : {1, 33, 64}) {
    for (int64_t n : {8192, 28672}) {
      ShapeQuery q;
      q.m = m, q.n = n, q.k = 8192;
      const TileConfig cfg = ChoosePlainConfig(q, kH100Sms, kSmemOptin);
      EXPECT_EQ(cfg.block_m, 64) << m;
      EXPECT_EQ(cfg.block_n, n == 8192 ? 128 : 256) << m << " " << n;
      EXPECT_EQ(cfg.cluster_m, 1) << m;
      EXPECT_GE(cfg.stages, 4) << m;
    }
  }
  // Groups keep the general choice.
  ShapeQuery g;
  g.m = 64, g.n = 8192, g.k = 8192, g.tiles_hint = 64;
  EXPECT_EQ(ChoosePlainConfig(g, kH100Sms, kSmemOptin).block_n, 128);
}

TEST(HeuristicsSm90, DecodeTilesUseAShallowPipeline) {
  // 64x128 tiles: 6 stages for B [N,K]; for B [K,N] 5 when the tail split halves each tile's K
  // (64 tiles on 132 SMs), the deepest that fits (8) otherwise (128 tiles).
  ShapeQuery q;
  q.m = 33, q.n = 8192, q.k = 8192;
  EXPECT_EQ(ChoosePlainConfig(q, kH100Sms, kSmemOptin).stages, 6);
  q.b_kn = true;
  EXPECT_EQ(ChoosePlainConfig(q, kH100Sms, kSmemOptin).stages, 5);
  q.k = 960;  // 15 K blocks: too short to split, so the deepest pipeline
  EXPECT_EQ(ChoosePlainConfig(q, kH100Sms, kSmemOptin).stages,
            MaxStages(64, 128, false, kSmemOptin));
  q.k = 8192;
  q.n = 16384;
  EXPECT_EQ(ChoosePlainConfig(q, kH100Sms, kSmemOptin).stages,
            MaxStages(64, 128, false, kSmemOptin));
  q.b_kn = false;
  EXPECT_EQ(ChoosePlainConfig(q, kH100Sms, kSmemOptin).stages, 6);
  // One row of 128x128 tiles: 5 stages for B [K,N], the deepest that fits (6) for B [N,K].
  ShapeQuery row;
  row.m = 96, row.n = 8192, row.k = 8192, row.b_kn = true;
  const TileConfig narrow = ChoosePlainConfig(row, kH100Sms, kSmemOptin);
  ASSERT_EQ(narrow.block_m * narrow.block_n, 128 * 128);
  EXPECT_EQ(narrow.stages, 5);
  row.b_kn = false;
  EXPECT_EQ(ChoosePlainConfig(row, kH100Sms, kSmemOptin).stages,
            MaxStages(128, 128, false, kSmemOptin));
  row.m = 1024, row.b_kn = true;  // more rows of tiles: the deepest pipeline
  const TileConfig many = ChoosePlainConfig(row, kH100Sms, kSmemOptin);
  EXPECT_EQ(many.stages, MaxStages(many.block_m, many.block_n, false, kSmemOptin));
  // 64x256 tiles keep the deepest pipeline.
  q.n = 28672;
  const TileConfig wide = ChoosePlainConfig(q, kH100Sms, kSmemOptin);
  EXPECT_EQ(wide.block_n, 256);
  EXPECT_EQ(wide.stages, MaxStages(64, 256, false, kSmemOptin));
}

TEST(HeuristicsSm90, ALoadsStopAtMWherePartialBoxesWereSlow) {
  TileConfig one;  // 128x128, no cluster
  one.block_m = 128, one.block_n = 128, one.cluster_m = 1;
  EXPECT_TRUE(ClipALoads(72, one));
  EXPECT_TRUE(ClipALoads(127, one));
  EXPECT_FALSE(ClipALoads(128, one));  // whole boxes
  EXPECT_FALSE(ClipALoads(1024, one));
  TileConfig narrow = one;  // 64-row tiles: 64-row boxes
  narrow.block_m = 64;
  EXPECT_TRUE(ClipALoads(17, narrow));
  EXPECT_FALSE(ClipALoads(64, narrow));
  TileConfig pair = one;  // 128x256 in 2-CTA clusters: only boxes less than half filled
  pair.block_n = 256, pair.cluster_m = 2;
  EXPECT_TRUE(ClipALoads(144, pair));
  EXPECT_TRUE(ClipALoads(160, pair));
  EXPECT_FALSE(ClipALoads(200, pair));
  EXPECT_FALSE(ClipALoads(320, pair));
  TileConfig tall = pair;  // 256-row tiles load two boxes of 128 rows
  tall.block_m = 256, tall.block_n = 128;
  EXPECT_TRUE(ClipALoads(300, tall));
}

TEST(HeuristicsSm90, ExpertDecodeGroupsGetTheDecodeTiles) {
  // Eight experts of 6-27 tokens over 28672 x 4096 weights: 64-row tiles, no cluster.
  std::vector<GroupMember> experts;
  for (int64_t m : {21, 9, 14, 27, 11, 17, 6, 23}) experts.push_back({m, 28672, 4096});
  TileConfig cfg = ChooseGroupConfig(experts, false, false, kH100Sms, kSmemOptin);
  EXPECT_EQ(cfg.block_m, 64);
  EXPECT_EQ(cfg.block_n, 256);  // 8 x 224 narrow tiles: more than one wave
  EXPECT_EQ(cfg.cluster_m, 1);
  // 4 x 32 tiles of 64x128 over N = 4096 fit one wave: 64x128, at the decode tiles' depth.
  experts.assign(4, GroupMember{16, 4096, 14336});
  cfg = ChooseGroupConfig(experts, false, false, kH100Sms, kSmemOptin);
  EXPECT_EQ(cfg.block_n, 128);
  EXPECT_EQ(cfg.stages, 6);
  // Two experts over B [K,N]: 64 tiles, split in two along K by the launch: 5 stages.
  experts.assign(2, GroupMember{1, 4096, 14336});
  EXPECT_EQ(ChooseGroupConfig(experts, false, true, kH100Sms, kSmemOptin).stages, 5);
  // ... unless the shortest member's K is too short to split.
  experts.push_back({1, 4096, 512});
  EXPECT_EQ(ChooseGroupConfig(experts, false, true, kH100Sms, kSmemOptin).stages,
            MaxStages(64, 128, false, kSmemOptin));
  experts.assign(4, GroupMember{16, 4096, 14336});
  // One member past 64 rows: the 128-row tiles of general groups.
  experts.push_back({65, 4096, 14336});
  cfg = ChooseGroupConfig(experts, false, false, kH100Sms, kSmemOptin);
  EXPECT_EQ(cfg.block_m, 128);
  EXPECT_EQ(cfg.cluster_m, 1);  // small members carry most of the work
}

TEST(HeuristicsSm90, LargeGroupsKeepClusters) {
  std::vector<GroupMember> group;
  for (int64_t m : {512, 1024, 2048, 4096}) group.push_back({m, 8192, 8192});
  const TileConfig cfg = ChooseGroupConfig(group, false, false, kH100Sms, kSmemOptin);
  EXPECT_EQ(cfg.block_m, 128);  // never 256-row tiles in groups
  EXPECT_EQ(cfg.cluster_m, 2);
}

TEST(HeuristicsSm90, NarrowTilesWhenWideOnesLeaveSmsIdle) {
  // 1024 x 1024: 8 x 4 = 32 wide tiles (a quarter of the SMs) vs 64 narrow ones.
  ShapeQuery q;
  q.m = 1024, q.n = 1024, q.k = 8192;
  const TileConfig cfg = ChoosePlainConfig(q, kH100Sms, kSmemOptin);
  EXPECT_EQ(cfg.block_m * cfg.block_n, 128 * 128);
}

TEST(HeuristicsSm90, TwoRowTilesUseWideClustersSplitAlongK) {
  // 128 < M <= 256 over N = 8192: 32 clusters of 128x256 (half a wave, split K in two), not 64
  // clusters of 128x128 each running the whole K.
  for (int64_t m : {129, 144, 160, 256}) {
    ShapeQuery q;
    q.m = m, q.n = 8192, q.k = 8192;
    const TileConfig cfg = ChoosePlainConfig(q, kH100Sms, kSmemOptin);
    EXPECT_EQ(cfg.block_m, 128) << m;
    EXPECT_EQ(cfg.block_n, 256) << m;
    EXPECT_EQ(cfg.cluster_m, 2) << m;
  }
  // One row of tiles keeps 128x128 (measured faster there: 44-45 us vs 47-50).
  ShapeQuery one;
  one.m = 128, one.n = 8192, one.k = 8192;
  EXPECT_EQ(ChoosePlainConfig(one, kH100Sms, kSmemOptin).block_n, 128);
}

// The weight shapes (N, K) of the m_sweep set the coalesced-batch bands were measured on.
constexpr int64_t kSweepWeights[][2] = {
    {4096, 14336}, {8192, 8192}, {8192, 28672}, {14336, 4096}, {28672, 8192}};

// ChooseConfig's launch for M x N x K over B in either layout, checked against a 128x256 tile in
// `cluster`-CTA clusters at the deepest pipeline, its tail split as planned.
void ExpectWideTiles(int64_t m, int64_t n, int64_t k, int cluster) {
  for (bool b_kn : {false, true}) {
    SCOPED_TRACE(testing::Message() << m << "x" << n << "x" << k << (b_kn ? " kn" : " nk"));
    ShapeQuery q;
    q.m = m, q.n = n, q.k = k, q.b_kn = b_kn;
    const TileConfig cfg = ChoosePlainConfig(q, kH100Sms, kSmemOptin);
    EXPECT_EQ(cfg.block_m, 128);
    EXPECT_EQ(cfg.block_n, 256);
    EXPECT_EQ(cfg.cluster_m, cluster);
    EXPECT_EQ(cfg.stages, MaxStages(128, 256, false, kSmemOptin));
    EXPECT_EQ(cfg.tail_splits, 0);
  }
}

TEST(HeuristicsSm90, ThreeAndFiveRowTilesUseWideTilesWithoutClusters) {
  // 256 < M <= 384 and 512 < M <= 640: a 2-CTA cluster would pad the odd row of tiles, and
  // 128x128 tiles (the model's choice for N = 4096 and 14336) ran 1.1-1.5x slower.
  for (const auto& w : kSweepWeights) {
    for (int64_t m : {257, 272, 320, 384, 513, 640}) ExpectWideTiles(m, w[0], w[1], 1);
  }
}

TEST(HeuristicsSm90, FourRowTilesInHalfAWaveUseWideClustersSplitAlongK) {
  // 384 < M <= 512 over N = 4096: 32 clusters of 128x256 (half a wave, split K in two), not a
  // wave of 128x128 clusters running the whole K.
  for (int64_t m : {385, 400, 512}) ExpectWideTiles(m, 4096, 14336, 2);
  // Wider N leaves the band to the wave-count model.
  ShapeQuery q;
  q.m = 448, q.n = 8192, q.k = 8192;
  EXPECT_EQ(MatchShapeRule(ShapeRules(), q, kH100Sms), nullptr);
}

TEST(HeuristicsSm90, SixRowTilesUseWideClusters) {
  // 640 < M <= 768: 2-CTA clusters of 128x256, not the model's 128x128 clusters at N = 8192.
  for (const auto& w : kSweepWeights) {
    for (int64_t m : {641, 768}) ExpectWideTiles(m, w[0], w[1], 2);
  }
}

TEST(HeuristicsSm90, CoalescedBatchBandsStayWithinTheirMeasurement) {
  ShapeQuery q;
  q.m = 320, q.n = 8192, q.k = 2048;  // K below the measured 4096
  EXPECT_EQ(MatchShapeRule(ShapeRules(), q, kH100Sms), nullptr);
  q.k = 8192, q.n = 65536;  // 768 tiles of 128x256: 5.8 waves, past the measured 2.5
  EXPECT_EQ(MatchShapeRule(ShapeRules(), q, kH100Sms), nullptr);
  q.n = 2048;  // 24 tiles: 0.18 waves, below the measured 0.36
  EXPECT_EQ(MatchShapeRule(ShapeRules(), q, kH100Sms), nullptr);
  q.n = 8192, q.m = 769;  // past the measured bands
  EXPECT_EQ(MatchShapeRule(ShapeRules(), q, kH100Sms), nullptr);
  q.m = 320, q.batch = 2;  // batches keep the model
  EXPECT_EQ(MatchShapeRule(ShapeRules(), q, kH100Sms), nullptr);
}

// The swap-AB bands: M cut into equal tiles of the narrowest compiled width that holds them.
TEST(HeuristicsSm90, SwapTilesFitTheRowsOfCoalescedBatches) {
  ShapeQuery q;
  q.n = 8192, q.k = 8192;
  const struct {
    int64_t m;
    int width, cluster;
  } want[] = {{129, 144, 1}, {160, 160, 1}, {208, 208, 1}, {240, 240, 1}, {257, 144, 1},
              {272, 144, 1}, {320, 160, 1}, {384, 192, 1}, {448, 224, 1}, {480, 240, 1},
              {513, 176, 1}, {576, 192, 1}, {577, 160, 2}, {640, 160, 2}, {768, 192, 2},
              {800, 208, 2}, {960, 240, 2}};
  for (const auto& w : want) {
    SCOPED_TRACE(testing::Message() << "M " << w.m);
    q.m = w.m;
    const TileConfig cfg = ChooseConfig(q, kH100Sms, kSmemOptin);
    ASSERT_TRUE(cfg.swap_ab);
    EXPECT_EQ(cfg.block_m, 128);
    EXPECT_EQ(cfg.block_n, w.width);
    EXPECT_EQ(cfg.cluster_m, w.cluster);
    EXPECT_GE(TileVariant(cfg.block_m, cfg.block_n, true), kFirstSwapVariant);
    EXPECT_EQ(cfg.stages, MaxStages(128, w.width, false, kSmemOptin));
    EXPECT_LE(SharedMemoryBytes(cfg, true), kSmemOptin);
  }
}

TEST(HeuristicsSm90, SwapTilesOnlyWhereTheyApply) {
  ShapeQuery q;
  q.n = 8192, q.k = 8192;
  for (int64_t m : {1, 64, 128, 241, 256, 481, 512, 961, 1024, 4096}) {
    q.m = m;
    EXPECT_FALSE(ChooseConfig(q, kH100Sms, kSmemOptin).swap_ab) << "M " << m;
  }
  q.m = 272;
  q.b_kn = true;  // both layouts
  EXPECT_TRUE(ChooseConfig(q, kH100Sms, kSmemOptin).swap_ab);
  q.b_kn = false, q.k = 2048;  // K below the measured 4096
  EXPECT_FALSE(ChooseConfig(q, kH100Sms, kSmemOptin).swap_ab);
  q.k = 8192, q.batch = 2;  // batches keep the plain tiles
  EXPECT_FALSE(ChooseConfig(q, kH100Sms, kSmemOptin).swap_ab);
  q.batch = 1, q.tiles_hint = 100;  // groups never swap
  EXPECT_FALSE(ChooseConfig(q, kH100Sms, kSmemOptin).swap_ab);
  q.tiles_hint = 0, q.m = 640, q.n = 28672;  // four M tiles fill 6.8 waves: plain tiles
  EXPECT_FALSE(ChooseConfig(q, kH100Sms, kSmemOptin).swap_ab);
  q.n = 14336;  // 3.4 waves
  EXPECT_TRUE(ChooseConfig(q, kH100Sms, kSmemOptin).swap_ab);
  q.m = 800, q.n = 28672;  // 769-960: any N
  EXPECT_TRUE(ChooseConfig(q, kH100Sms, kSmemOptin).swap_ab);
  q.m = 544, q.n = 4096;  // four 144-row tiles fit one wave
  TileConfig four = ChooseConfig(q, kH100Sms, kSmemOptin);
  EXPECT_EQ(four.block_n, 144);
  EXPECT_EQ(four.cluster_m, 2);
  q.n = 8192;  // they would not: three 192-row tiles
  TileConfig three = ChooseConfig(q, kH100Sms, kSmemOptin);
  EXPECT_EQ(three.block_n, 192);
  EXPECT_EQ(three.cluster_m, 1);
}

// Above SwapRule's bands, swap-AB tiles only where the plain launch is 128x128 tiles or fills
// less than one wave, at the width whose whole waves model fastest.
TEST(HeuristicsSm90, LargeMSwapWherePlainTilesAreNarrowOrIdle) {
  const struct {
    int64_t m, n, k;
    int width;  // 0: the plain launch stays
    const char* why;
  } want[] = {{1536, 4096, 14336, 192, "128x128 tiles: 2.9 waves, eight 192-row tiles 1.9"},
              {1376, 4096, 14336, 176, "128x128 tiles"},
              {1104, 2048, 8192, 144, "72 128x256 tiles on 132 SMs"},
              {1552, 2048, 14336, 208, "56 of 66 2-CTA clusters busy"},
              {1456, 3072, 14336, 160, "128x128 tiles: no 144-row swap tiles"},
              {2272, 4096, 8192, 0, "128x256 tiles over 2.2 waves: the tail split"},
              {4336, 2048, 14336, 0, "128x256 tiles over 2.6 waves"},
              {1024, 8192, 8192, 0, "128x256 tiles filling 1.9 waves"},
              {1536, 4096, 2048, 0, "K below 4096"},
              {960, 4096, 14336, 240, "SwapRule's band"}};
  ShapeQuery q;
  for (bool kn : {false, true}) {
    q.b_kn = kn;
    for (const auto& w : want) {
      SCOPED_TRACE(testing::Message() << w.m << "x" << w.n << "x" << w.k << ": " << w.why);
      q.m = w.m, q.n = w.n, q.k = w.k;
      const TileConfig cfg = ChooseConfig(q, kH100Sms, kSmemOptin);
      EXPECT_EQ(cfg.swap_ab, w.width != 0);
      if (w.width == 0 || w.m <= 960) continue;
      EXPECT_EQ(cfg.block_n, w.width);
      EXPECT_EQ(cfg.cluster_m, 2);
      EXPECT_EQ(cfg.stages, MaxStages(128, w.width, false, kSmemOptin));
      TileConfig out;
      EXPECT_TRUE(LargeMSwapRule(q, ChoosePlainConfig(q, kH100Sms, kSmemOptin), kH100Sms,
                                 kSmemOptin, &out));
    }
  }
  q.m = 1536, q.n = 4096, q.k = 14336, q.batch = 2;  // batches keep the plain tiles
  EXPECT_FALSE(ChooseConfig(q, kH100Sms, kSmemOptin).swap_ab);
  q.batch = 1, q.tiles_hint = 100;  // groups never swap
  EXPECT_FALSE(ChooseConfig(q, kH100Sms, kSmemOptin).swap_ab);
}

// Stream-K only where it measured faster: one tile along M, a wave and 0.5-0.75 of another, and
// tiles that hold kStreamKMinTileMacs or more.
TEST(HeuristicsSm90, StreamKWhereOneLongTileColumnLeavesHalfAWaveIdle) {
  ShapeQuery q;
  q.n = 28672, q.k = 8192;
  for (bool kn : {false, true}) {
    q.b_kn = kn;
    for (int64_t m : {176, 192, 208, 240, 256}) {
      q.m = m;
      const TileConfig cfg = ChooseConfig(q, kH100Sms, kSmemOptin);
      EXPECT_EQ(cfg.tail_splits, kStreamKSplits) << "M " << m;
    }
  }
  q.b_kn = false;
  q.m = 256;
  EXPECT_FALSE(ChooseConfig(q, kH100Sms, kSmemOptin).swap_ab);  // 128x256 in 2-CTA clusters
  EXPECT_EQ(ChooseConfig(q, kH100Sms, kSmemOptin).cluster_m, 2);
  const struct {
    int64_t m, n, k, batch;
    const char* why;
  } keep[] = {{160, 28672, 8192, 1, "a tile under kStreamKMinTileMacs"},
              {192, 28672, 6144, 1, "a shorter K"},
              {368, 14336, 4096, 1, "two tiles along M read one weight panel"},
              {192, 8192, 28672, 1, "less than a wave: the tail split"},
              {192, 14336, 8192, 1, "less than a wave (112 tiles)"},
              {192, 32768, 8192, 1, "a tail of 0.94 of a wave"},
              {192, 28672, 8192, 2, "a batch"},
              {96, 28672, 8192, 1, "decode-like rows"},
              {4096, 28672, 8192, 1, "27.15 waves: a tail of 0.15"},
              {2048, 8192, 8192, 1, "3.88 waves: a tail of 0.88"},
              {8192, 8192, 2048, 1, "several tiles along M with K below 4096"}};
  for (const auto& c : keep) {
    q.m = c.m, q.n = c.n, q.k = c.k, q.batch = c.batch;
    EXPECT_NE(ChooseConfig(q, kH100Sms, kSmemOptin).tail_splits, kStreamKSplits) << c.why;
  }
  q.m = 192, q.n = 28672, q.k = 8192, q.batch = 1, q.tiles_hint = 100;
  EXPECT_NE(ChooseConfig(q, kH100Sms, kSmemOptin).tail_splits, kStreamKSplits) << "a group";
}

// Several plain cluster tiles along M: stream-K where whole waves end in a tail of half to three
// quarters of one, with K >= 4096.
TEST(HeuristicsSm90, StreamKWherePlainWavesEndInHalfAWave) {
  const struct {
    int64_t m, n, k;
    const char* why;
  } take[] = {{8192, 8192, 8192, "15.52 waves of 128x256 2-CTA clusters"},
              {512, 14336, 4096, "1.70 waves, two cluster tiles along M"},
              {6144, 6144, 6144, "8.73 waves"},
              {1600, 6144, 14336, "2.55 waves"}};
  ShapeQuery q;
  for (bool kn : {false, true}) {
    q.b_kn = kn;
    for (const auto& t : take) {
      q.m = t.m, q.n = t.n, q.k = t.k;
      const TileConfig cfg = ChooseConfig(q, kH100Sms, kSmemOptin);
      EXPECT_FALSE(cfg.swap_ab) << t.why;
      EXPECT_EQ(cfg.tail_splits, kStreamKSplits) << t.why;
    }
  }
}

TEST(HeuristicsSm90, ShapeRulesNameCompiledLaunches) {
  ASSERT_FALSE(ShapeRules().empty());
  for (const ShapeRule& r : ShapeRules()) {
    SCOPED_TRACE(testing::Message() << "rule M " << r.m_min << "-" << r.m_max);
    EXPECT_GE(TileVariant(r.block_m, r.block_n), 0) << r.block_m << "x" << r.block_n;
    EXPECT_TRUE(r.cluster_m == 1 || r.cluster_m == 2);
    EXPECT_GT(r.m_min, kWideDecodeMaxRows);  // the decode rows have their own choice
    EXPECT_LE(r.m_min, r.m_max);
    EXPECT_GE(r.tail_splits, 0);
    EXPECT_LE(r.tail_splits, kMaxSplits);
    if (r.min_waves > 0 && r.max_waves > 0) EXPECT_LE(r.min_waves, r.max_waves);
    if (r.stages > 0) {
      TileConfig cfg;
      cfg.block_m = r.block_m, cfg.block_n = r.block_n, cfg.stages = r.stages;
      EXPECT_GE(r.stages, 2);
      EXPECT_LE(SharedMemoryBytes(cfg, true), kSmemOptin);
    }
  }
}

TEST(HeuristicsSm90, ShapeRulesMatchTheirBand) {
  // 64x256 tiles over 65-512 rows of B [K,N] while they fill one to two waves, split in 3.
  const ShapeRule rules[] = {{.m_min = 65,
                              .m_max = 512,
                              .layout = ShapeRule::Layout::kKN,
                              .min_waves = 1,
                              .max_waves = 2,
                              .block_m = 64,
                              .block_n = 256,
                              .cluster_m = 1,
                              .tail_splits = 3},
                             {.m_min = 65, .m_max = 1024, .block_m = 128, .block_n = 128}};
  ShapeQuery q;
  q.m = 272, q.n = 8192, q.k = 8192, q.b_kn = true;  // 5 x 32 = 160 tiles: 1.2 waves
  EXPECT_EQ(MatchShapeRule(rules, q, kH100Sms), &rules[0]);
  q.b_kn = false;  // the layout
  EXPECT_EQ(MatchShapeRule(rules, q, kH100Sms), &rules[1]);
  q.b_kn = true, q.n = 4096;  // 80 tiles: 0.6 waves
  EXPECT_EQ(MatchShapeRule(rules, q, kH100Sms), &rules[1]);
  q.n = 28672;  // 560 tiles: 4.2 waves
  EXPECT_EQ(MatchShapeRule(rules, q, kH100Sms), &rules[1]);
  q.n = 8192, q.m = 513;  // M past the band
  EXPECT_EQ(MatchShapeRule(rules, q, kH100Sms), &rules[1]);
  q.m = 1025;
  EXPECT_EQ(MatchShapeRule(rules, q, kH100Sms), nullptr);
  q.m = 64;  // decode rows
  EXPECT_EQ(MatchShapeRule(rules, q, kH100Sms), nullptr);
  q.m = 272, q.batch = 2;  // batches and groups keep the model
  EXPECT_EQ(MatchShapeRule(rules, q, kH100Sms), nullptr);
  q.batch = 1, q.tiles_hint = 300;
  EXPECT_EQ(MatchShapeRule(rules, q, kH100Sms), nullptr);
}

TEST(HeuristicsSm90, TileCount) {
  ShapeQuery q;
  q.m = 129, q.n = 257, q.k = 1, q.batch = 3;
  TileConfig cfg;
  cfg.block_n = 256;
  EXPECT_EQ(NumTiles(q, cfg), 2 * 2 * 3);
}

TEST(HeuristicsSm90, GroupsCanExcludeTallTiles) {
  ShapeQuery q;
  q.m = 4096, q.n = 4096, q.k = 4096, q.allow_tall_tiles = false;
  EXPECT_EQ(ChoosePlainConfig(q, kH100Sms, kSmemOptin).block_m, 128);
}

TEST(HeuristicsSm90, L2PromotionFollowsTheDramPeak) {
  EXPECT_EQ(L2PromotionBytes(4915), 128);  // H200: 6144-bit HBM3e at 3.2 GHz
  EXPECT_EQ(L2PromotionBytes(kL2Promotion128MinGBps), 128);
  EXPECT_EQ(L2PromotionBytes(kL2Promotion128MinGBps - 1), 256);
  EXPECT_EQ(L2PromotionBytes(3352), 256);  // H100 SXM: 5120-bit HBM3 at 2.6 GHz
  EXPECT_EQ(L2PromotionBytes(0), 256);     // unknown
}

}  // namespace
}  // namespace gemm::kernel::sm90
