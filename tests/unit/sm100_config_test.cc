// Tests of the SM100 kernel configurations (kernel/src/sm100/sm100_config.h): tile shapes,
// pipeline depth and the shared-memory layout (fits the 227 KiB opt-in limit, 1024-byte aligned
// operand stages for SWIZZLE_128B, TMEM double buffer within 512 columns).
#include "sm100/sm100_config.h"

#include <cstdint>

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
  EXPECT_GE(Cfg::kTmemSlotOffset, Cfg::kBarrierOffset + Cfg::kNumBarriers * 8);
  // TMEM: power of two in [32, 512] holding two accumulators.
  EXPECT_LE(Cfg::kTmemCols, 512u);
  EXPECT_EQ(Cfg::kTmemCols & (Cfg::kTmemCols - 1), 0u);
  EXPECT_EQ(Cfg::kTmemCols, 2u * Cfg::kUmmaN);
  // The epilogue covers the accumulator exactly.
  EXPECT_EQ(Cfg::kEpiChunks * Cfg::kEpiColsPerChunk, Cfg::kUmmaN);
  // Each stage's expect_tx byte count equals what the TMA boxes deliver.
  EXPECT_EQ(Cfg::kStageBytes, static_cast<uint32_t>((Cfg::kRowsX + Cfg::kRowsY) * 64 * 2));
}

TEST(Sm100Config, WideTiles) {
  using Bf16 = KernelConfig<256, false, false>;
  using F32 = KernelConfig<256, false, true>;
  CheckLayout<Bf16>();
  CheckLayout<F32>();
  EXPECT_EQ(Bf16::kClusterBlockX, 256);  // 256 x 256 cluster tile (seed 000 level 9)
  EXPECT_EQ(Bf16::kClusterBlockY, 256);
  EXPECT_EQ(Bf16::kRowsX, 128);  // each CTA: 128 rows of A ...
  EXPECT_EQ(Bf16::kRowsY, 128);  // ... and half of the B tile
  EXPECT_EQ(Bf16::kStages, 6);
  EXPECT_EQ(Bf16::kEpiColsPerChunk, 64);  // 128-byte rows of bf16
  EXPECT_EQ(F32::kEpiColsPerChunk, 32);   // 128-byte rows of f32
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
