// Tests of the SM100 kernel configurations (kernel/src/sm100/sm100_config.h): tile shapes,
// pipeline depth and the shared-memory layout (fits the 227 KiB opt-in limit, 1024-byte aligned
// operand stages for SWIZZLE_128B, TMEM double buffer within 512 columns).
#include "sm100/sm100_config.h"

#include <cstdint>
#include <set>

#include "gtest/gtest.h"

namespace gemm::kernel::sm100 {
namespace {

template <class Cfg>
void CheckLayout() {
  EXPECT_LE(Cfg::kSmemBytes, kSmemPerBlockOptin);
  EXPECT_GE(Cfg::kStages, 4);
  EXPECT_EQ(Cfg::kXOffset % 1024, 0u);
  EXPECT_EQ(Cfg::kYOffset % 1024, 0u);
  EXPECT_EQ(Cfg::kXStageBytes % 1024, 0u);
  EXPECT_EQ(Cfg::kYStageBytes % 1024, 0u);
  EXPECT_EQ(Cfg::kEpiOffset % 1024, 0u);
  EXPECT_EQ(Cfg::kEpiBufferBytes % 1024, 0u);
  EXPECT_EQ(Cfg::kBarrierOffset % 8, 0u);
  // TMEM: power of two in [32, 512] holding kAccumStages accumulators of kMWaves x kUmmaN.
  EXPECT_LE(Cfg::kTmemCols, 512u);
  EXPECT_EQ(Cfg::kTmemCols & (Cfg::kTmemCols - 1), 0u);
  EXPECT_EQ(Cfg::kTmemCols, static_cast<uint32_t>(Cfg::kAccumStages * Cfg::kMWaves * Cfg::kUmmaN));
  // The epilogue covers each wave's accumulator exactly.
  EXPECT_EQ(Cfg::kEpiChunks * Cfg::kEpiColsPerChunk, Cfg::kUmmaN);
  // Barriers: all distinct slots inside the barrier area, then the 16-byte CLC responses.
  std::set<uint32_t> ids;
  for (uint32_t i = 0; i < static_cast<uint32_t>(Cfg::kStages); ++i) {
    ids.insert(Cfg::FullBar(i));
    ids.insert(Cfg::EmptyBar(i));
  }
  for (uint32_t b = 0; b < static_cast<uint32_t>(Cfg::kAccumStages); ++b) {
    ids.insert(Cfg::TmemFullBar(b));
    ids.insert(Cfg::TmemEmptyBar(b));
  }
  for (uint32_t w = 0; w < kNumEpilogueWarps; ++w) {
    for (uint32_t b = 0; b < static_cast<uint32_t>(Cfg::kEpiBuffers); ++b)
      ids.insert(Cfg::CBar(w, b));
  }
  for (uint32_t i = 0; i < static_cast<uint32_t>(kClcStages); ++i) {
    ids.insert(Cfg::ClcFullBar(i));
    ids.insert(Cfg::ClcEmptyBar(i));
  }
  EXPECT_EQ(ids.size(), Cfg::kNumBarriers);
  EXPECT_EQ(*ids.rbegin(), Cfg::kNumBarriers - 1);
  EXPECT_EQ(Cfg::kClcResponseOffset % 16, 0u);
  EXPECT_GE(Cfg::kClcResponseOffset, Cfg::kBarrierOffset + Cfg::kNumBarriers * 8);
  EXPECT_GE(Cfg::kTmemSlotOffset, Cfg::kClcResponseOffset + kClcStages * 16);
  // Each stage's expect_tx byte count equals what the TMA boxes deliver.
  EXPECT_EQ(Cfg::kStageBytes, static_cast<uint32_t>((Cfg::kRowsX + Cfg::kRowsY) * 64 * 2));
}

TEST(Sm100Config, WideTiles) {
  using Bf16 = KernelConfig<256, false, false>;
  using F32 = KernelConfig<256, false, true>;
  CheckLayout<Bf16>();
  CheckLayout<F32>();
  EXPECT_EQ(Bf16::kClusterBlockX, 256);  // 256 x 256 cluster tile
  EXPECT_EQ(Bf16::kClusterBlockY, 256);
  EXPECT_EQ(Bf16::kRowsX, 128);  // each CTA: 128 rows of A ...
  EXPECT_EQ(Bf16::kRowsY, 128);  // ... and half of the B tile
  EXPECT_EQ(Bf16::kStages, 6);
  EXPECT_EQ(Bf16::kEpiColsPerChunk, 64);  // 128-byte rows of bf16
  EXPECT_EQ(F32::kEpiColsPerChunk, 32);   // 128-byte rows of f32
}

// The Blackwell GEMM Optimization Manual's final level: 256/128 = 2 M-waves, 4 pipeline stages
// ("larger tiles fill SMEM").
TEST(Sm100Config, TwoMWaveTiles) {
  using Bf16 = KernelConfig<256, false, false, 2>;
  using F32 = KernelConfig<256, false, true, 2>;
  CheckLayout<Bf16>();
  CheckLayout<F32>();
  EXPECT_EQ(Bf16::kMWaves, 2);
  EXPECT_EQ(Bf16::kRowsX, 256);           // each CTA: 2 waves of 128 rows of A
  EXPECT_EQ(Bf16::kClusterBlockX, 512);   // cluster tile 512 x 256
  EXPECT_EQ(Bf16::kXStageBytes, 32768u);  // one 256-row TMA box
  EXPECT_EQ(Bf16::kXWaveBytes, 16384u);
  EXPECT_EQ(Bf16::kStageBytes, 49152u);
  EXPECT_EQ(Bf16::kStages, 4);
  // 2 waves x 256 columns = all 512 TMEM columns: no room for a second accumulator.
  EXPECT_EQ(Bf16::kAccumStages, 1);
  EXPECT_EQ(Bf16::kTmemCols, 512u);
  // The 1-wave kernel keeps its TMEM double buffer and 6 stages.
  EXPECT_EQ((KernelConfig<256, false, false>::kAccumStages), 2);
  EXPECT_EQ((KernelConfig<256, false, false>::kStages), 6);
}

TEST(Sm100Config, ChooseMWaves) {
  // GB200: 148 SMs = 74 clusters. The manual's large cubes take 2 waves.
  EXPECT_EQ(ChooseMWaves(8192, 8192, 8192, 1, 74), 2);  // 1024 1-wave tiles: 14 waves vs 7
  EXPECT_EQ(ChooseMWaves(4096, 4096, 4096, 1, 74), 2);  // 256 -> 4 waves vs 2
  EXPECT_EQ(ChooseMWaves(6144, 6144, 6144, 1, 74), 2);  // 576 -> 8 vs 4
  EXPECT_EQ(ChooseMWaves(12288, 12288, 12288, 1, 74), 2);
  // Too few tiles to fill the clusters with 512-row tiles.
  EXPECT_EQ(ChooseMWaves(2048, 2048, 8192, 1, 74), 1);
  // Short K: the epilogue no longer overlapping the next tile would show.
  EXPECT_EQ(ChooseMWaves(8192, 8192, 1024, 1, 74), 1);
  EXPECT_EQ(ChooseMWaves(8192, 8192, 2048, 1, 74), 2);
  // Worse last wave: 5120 x 4096 is 320 1-wave tiles (5 waves) but 160 2-wave tiles (3 waves,
  // i.e. 6 1-wave equivalents).
  EXPECT_EQ(ChooseMWaves(5120, 4096, 4096, 1, 74), 1);
  // Batches count.
  EXPECT_EQ(ChooseMWaves(1024, 4096, 4096, 16, 74), 2);
  // Degenerate input.
  EXPECT_EQ(ChooseMWaves(0, 4096, 4096, 1, 74), 1);
  EXPECT_EQ(ChooseMWaves(4096, 4096, 4096, 1, 0), 1);
}

TEST(Sm100Config, SwapAbTiles) {
  using Bf16 = KernelConfig<128, true, false>;
  using F32 = KernelConfig<128, true, true>;
  CheckLayout<Bf16>();
  CheckLayout<F32>();
  EXPECT_EQ(Bf16::kRowsY, 64);
  EXPECT_EQ(Bf16::kStages, 8);
  EXPECT_EQ(Bf16::kEpiChunkBytes, 32u * 32u * 2u);
  EXPECT_EQ(F32::kEpiChunkBytes, 32u * 32u * 4u);
}

TEST(Sm100Config, WarpRoles) {
  EXPECT_EQ(kNumThreads, 256);
  EXPECT_EQ(kFirstEpilogueWarp % 4, 0);  // epilogue warps 4..7 map to TMEM lane quarters 0..3
  EXPECT_EQ(kNumEpilogueThreads, 128);
}

}  // namespace
}  // namespace gemm::kernel::sm100
