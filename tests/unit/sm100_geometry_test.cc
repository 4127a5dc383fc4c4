// Tests of the SM100 variants' one source of geometry (kernel/src/sm100/sm100_variant.h): for
// every one of the 12 compiled variants, the bytes the host's TMA boxes land per pipeline stage
// and per epilogue chunk equal the device's expect_tx (KernelConfig's kStageBytes and
// kEpiChunkBytes), the boxes obey TMA's limits, and the index/name/key mapping is a bijection.
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "sm100/sm100_variant.h"

namespace gemm::kernel::sm100 {
namespace {

TEST(Sm100GeometryTest, IndexAndKeyAreInverseOverAllTwelveVariants) {
  std::set<std::string> names;
  for (int i = 0; i < kNumVariants; ++i) {
    const VariantKey key = VariantAt(i);
    EXPECT_EQ(VariantIndex(key), i);
    names.insert(VariantName(key));
  }
  EXPECT_EQ(names.size(), 12u);
  EXPECT_EQ(VariantName(VariantAt(0)), "sm100.swap_ab.nk.bf16");
  EXPECT_EQ(VariantName(VariantAt(11)), "sm100.wide2.kn.fp32");
}

TEST(Sm100GeometryTest, BoxBytesPerStageEqualTheDevicesExpectTxForAllTwelveVariants) {
  for (int i = 0; i < kNumVariants; ++i) {
    const VariantKey key = VariantAt(i);
    const Geometry g = GeometryOf(key);
    SCOPED_TRACE(VariantName(key));
    // Host side, computed from the boxes alone: what one CTA's loads land per stage.
    const uint32_t landed = g.x.Bytes() + g.y.Bytes();
    EXPECT_EQ(landed, g.stage_bytes);
    // The device's expect_tx per stage and C chunk (the same KernelConfig the kernel uses).
    const uint32_t device_tx = WithVariant(
        key, []<class Cfg, bool kX, bool kY>(Variant<Cfg, kX, kY>) { return Cfg::kStageBytes; });
    EXPECT_EQ(landed, device_tx);
    const uint32_t chunk_tx = WithVariant(
        key, []<class Cfg, bool kX, bool kY>(Variant<Cfg, kX, kY>) { return Cfg::kEpiChunkBytes; });
    EXPECT_EQ(g.out.Bytes(), chunk_tx);
    // The X rows cover the CTA's share of the cluster tile, Y likewise, K one block.
    const bool x_mn = key.swap_ab ? key.x_mn_major : false;
    const bool y_mn = key.swap_ab ? false : key.y_mn_major;
    EXPECT_EQ((x_mn ? g.x.inner * g.x.count : g.x.outer) * 2,
              static_cast<uint32_t>(g.cluster_block_x));
    EXPECT_EQ((y_mn ? g.y.inner * g.y.count : g.y.outer) * 2,
              static_cast<uint32_t>(g.cluster_block_y));
    EXPECT_EQ(x_mn ? g.x.outer : g.x.inner, static_cast<uint32_t>(g.block_k));
    // TMA: box dimensions <= 256 elements; with SWIZZLE_128B the inner extent is 128 bytes.
    for (const Box* b : {&g.x, &g.y, &g.out}) {
      EXPECT_LE(b->inner, 256u);
      EXPECT_LE(b->outer, 256u);
    }
    EXPECT_EQ(g.x.inner * g.x.elem_bytes, 128u);
    EXPECT_EQ(g.y.inner * g.y.elem_bytes, 128u);
    if (g.out_swizzle_128b) EXPECT_EQ(g.out.inner * g.out.elem_bytes, 128u);
  }
}

TEST(Sm100GeometryTest, TileCountsFollowTheClusterTile) {
  ProblemShape s;
  s.rows_x = 1000;
  s.rows_y = 520;
  s.k = 136;
  for (int i = 0; i < kNumVariants; ++i) {
    const VariantKey key = VariantAt(i);
    const Geometry g = GeometryOf(key);
    SCOPED_TRACE(VariantName(key));
    const int64_t want = int64_t{(1000 + g.cluster_block_x - 1) / g.cluster_block_x} *
                         ((520 + g.cluster_block_y - 1) / g.cluster_block_y) * 3;
    EXPECT_EQ(TotalTiles(key, &s, 3, /*uniform=*/true), want);
  }
}

}  // namespace
}  // namespace gemm::kernel::sm100
