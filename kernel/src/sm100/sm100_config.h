// Compile-time configuration of the SM100 kernel variants: tile shape, warp roles, pipeline
// depth and the per-CTA shared-memory layout (identical in both CTAs of a pair: the peer's
// barriers and operands are addressed at the same offsets). Pure, unit-tested on the CPU
// (tests/unit/sm100_config_test.cc).
#pragma once

#include <cstdint>

namespace gemm::kernel::sm100 {

// Opt-in shared memory per block on SM100 (227 KiB, as on SM90); the launcher also checks the
// device's cudaDevAttrMaxSharedMemoryPerBlockOptin at run time.
inline constexpr uint32_t kSmemPerBlockOptin = 232448;

// Warp roles (256 threads): 0 TMA producer, 1 MMA issuer (leader CTA only), 2 TMEM allocator,
// 3 idle, 4-7 epilogue (128 threads; warp w reads TMEM lanes 32*(w%4)..+31).
inline constexpr int kNumThreads = 256;
inline constexpr int kProducerWarp = 0;
inline constexpr int kMmaWarp = 1;
inline constexpr int kTmemWarp = 2;
inline constexpr int kFirstEpilogueWarp = 4;
inline constexpr int kNumEpilogueWarps = 4;
inline constexpr int kNumEpilogueThreads = kNumEpilogueWarps * 32;

// Cluster Launch Control ring (sm100_clc.h): response slots / barrier pairs.
inline constexpr int kClcStages = 2;

// One kernel variant. kUmmaN: N of the cta_group::2 UMMA. kSwapAB: the small-M variant (B in the
// M slot, A in the N slot, transposed epilogue). kMWaves: UMMA M-waves per tile (the final level
// of the Blackwell GEMM Optimization Manual, item 3: "M-waves 1 -> 2 (BLOCK_M / WAVE_BLOCK_M =
// 256/128)"). One wave covers 128 rows per CTA (the 128 TMEM lanes of one cta_group::2 M=256
// UMMA); with kMWaves = 2 each CTA holds 256 rows of X, the cluster tile is 512 x kUmmaN, and
// wave w accumulates into its own kUmmaN TMEM columns ("each M-wave writes to separate TMEM
// columns", the manual). 2 x 256 columns fill all 512 columns of TMEM, so the 2-wave wide
// variant has ONE accumulator (no TMEM double buffer); it is a configuration choice picked for
// large shapes (ChooseMWaves), not the default.
template <int kUmmaN_, bool kSwapAB_, bool kOutF32_, int kMWaves_ = 1>
struct KernelConfig {
  static constexpr int kUmmaM = 256;
  static constexpr int kUmmaN = kUmmaN_;
  static constexpr int kUmmaK = 16;  // 32 bytes of bf16: one MMA K-slice
  static constexpr bool kSwapAB = kSwapAB_;
  static constexpr bool kOutF32 = kOutF32_;
  static constexpr int kMWaves = kMWaves_;
  static constexpr int kWaveRows = kUmmaM / 2;        // rows per CTA per wave (TMEM lanes)
  static constexpr int kBlockK = 64;                  // one 128-byte swizzle row of bf16
  static constexpr int kRowsX = kMWaves * kWaveRows;  // per CTA
  static constexpr int kRowsY = kUmmaN / 2;           // per CTA
  static constexpr int kClusterBlockX = 2 * kRowsX;
  static constexpr int kClusterBlockY = kUmmaN;
  static constexpr int kOutBytes = kOutF32 ? 4 : 2;

  static constexpr uint32_t kXStageBytes = kRowsX * kBlockK * 2;
  static constexpr uint32_t kXWaveBytes = kWaveRows * kBlockK * 2;  // K-major: 16 KiB per wave
  static constexpr uint32_t kYStageBytes = kRowsY * kBlockK * 2;
  static constexpr uint32_t kStageBytes = kXStageBytes + kYStageBytes;

  // Epilogue: each epilogue warp stages 32 rows in two 4 KiB buffers (double-buffered TMA store).
  // Wide kernel: 32 rows x 128 bytes, 128B-swizzled. Swap-AB: 32 M rows x 32 N columns.
  static constexpr int kEpiBuffers = 2;
  static constexpr uint32_t kEpiBufferBytes = 4096;
  static constexpr int kEpiColsPerChunk = kSwapAB ? 32 : 128 / kOutBytes;
  static constexpr int kEpiChunks = kUmmaN / kEpiColsPerChunk;  // per wave
  static constexpr uint32_t kEpiChunkBytes =
      kSwapAB ? 32u * 32u * kOutBytes : 32u * 128u;  // bytes one TMA store moves

  // TMEM: kAccumStages accumulators of kMWaves * kUmmaN columns each; two (double buffer) when
  // they fit in the 512 columns, else one.
  static constexpr uint32_t kAccumCols = kMWaves * kUmmaN;
  static constexpr int kAccumStages = 2 * kAccumCols <= 512 ? 2 : 1;
  static constexpr uint32_t kTmemCols = kAccumStages * kAccumCols;

  static constexpr uint32_t kAlignPad = 1024;         // dynamic smem base rounded up to 1024 B
  static constexpr uint32_t kBarrierAreaBytes = 512;  // barriers, CLC responses, TMEM slot
  static constexpr uint32_t kFixedBytes =
      kAlignPad + kNumEpilogueWarps * kEpiBuffers * kEpiBufferBytes + kBarrierAreaBytes;
  static constexpr int kMaxStages = 8;
  static constexpr int kStagesFit =
      static_cast<int>((kSmemPerBlockOptin - kFixedBytes) / kStageBytes);
  static constexpr int kStages = kStagesFit < kMaxStages ? kStagesFit : kMaxStages;

  // Barrier indices (8 bytes each from kBarrierOffset): full[S], empty[S], tmem_full[A],
  // tmem_empty[A], c_full[4 warps][2 buffers], clc_full[kClcStages], clc_empty[kClcStages].
  static constexpr uint32_t FullBar(uint32_t s) { return s; }
  static constexpr uint32_t EmptyBar(uint32_t s) { return kStages + s; }
  static constexpr uint32_t TmemFullBar(uint32_t b) { return 2 * kStages + b; }
  static constexpr uint32_t TmemEmptyBar(uint32_t b) { return 2 * kStages + kAccumStages + b; }
  static constexpr uint32_t CBar(uint32_t w, uint32_t b) {
    return 2 * kStages + 2 * kAccumStages + w * kEpiBuffers + b;
  }
  static constexpr uint32_t ClcFullBar(uint32_t i) {
    return 2 * kStages + 2 * kAccumStages + kNumEpilogueWarps * kEpiBuffers + i;
  }
  static constexpr uint32_t ClcEmptyBar(uint32_t i) { return ClcFullBar(kClcStages) + i; }
  static constexpr uint32_t kNumBarriers = ClcEmptyBar(kClcStages);

  // Offsets from the 1024-aligned base.
  static constexpr uint32_t kXOffset = 0;
  static constexpr uint32_t kYOffset = kXOffset + kStages * kXStageBytes;
  static constexpr uint32_t kEpiOffset = kYOffset + kStages * kYStageBytes;
  static constexpr uint32_t kBarrierOffset =
      kEpiOffset + kNumEpilogueWarps * kEpiBuffers * kEpiBufferBytes;
  // CLC responses: 16 bytes each, 16-byte aligned (PTX: "naturally aligned" b128).
  static constexpr uint32_t kClcResponseOffset = (kBarrierOffset + kNumBarriers * 8 + 15) / 16 * 16;
  static constexpr uint32_t kTmemSlotOffset = kClcResponseOffset + kClcStages * 16;
  static constexpr uint32_t kSmemBytes = kAlignPad + kTmemSlotOffset + 16;

  static_assert(kStages >= 2, "pipeline too shallow");
  static_assert(kSmemBytes <= kSmemPerBlockOptin, "shared memory over the SM100 limit");
  static_assert(kTmemSlotOffset + 16 - kBarrierOffset <= kBarrierAreaBytes,
                "barrier area over its budget");
  static_assert(kUmmaN % 32 == 0 && kUmmaN >= 64 && kUmmaN <= 256, "invalid UMMA N");
  static_assert(kEpiChunkBytes <= kEpiBufferBytes, "staging chunk too large");
  static_assert(kMWaves == 1 || kMWaves == 2, "1 or 2 M-waves (at most 256/128)");
  static_assert(kMWaves == 1 || !kSwapAB, "M-waves only for the wide kernel");
  static_assert(kTmemCols <= 512, "TMEM has 512 columns");
  static_assert((kTmemCols & (kTmemCols - 1)) == 0 && kTmemCols >= 32, "alloc: power of two");
};

// M-waves of the wide (non-swap-AB) kernel for one strided batch: 2 (512 x 256 cluster tiles,
// one TMEM accumulator, 4 stages; the manual's final level) when it keeps every cluster busy and
// does not lengthen the last wave, else 1 (256 x 256, TMEM double buffer, 6 stages). A 2-wave tile
// costs two 1-wave tiles, so it is taken when ceil(tiles2 / clusters) * 2 <= ceil(tiles1 /
// clusters) (no worse wave quantization: 8192^3 on 74 clusters is 14 waves of 1-wave tiles or 7
// of 2-wave tiles) and K has at least kMinKBlocksForWaves blocks of 64, so the epilogue that no
// longer overlaps the next tile's MMAs (single accumulator) is amortized over a long main loop.
inline constexpr int32_t kMinKBlocksForWaves = 32;  // K >= 2048
constexpr int ChooseMWaves(int64_t rows_x, int64_t rows_y, int64_t k, int64_t batch,
                           int64_t clusters) {
  if (rows_x <= 0 || rows_y <= 0 || k <= 0 || batch <= 0 || clusters <= 0) return 1;
  if ((k + 63) / 64 < kMinKBlocksForWaves) return 1;
  const int64_t by = (rows_y + 255) / 256;
  const int64_t tiles1 = (rows_x + 255) / 256 * by * batch;
  const int64_t tiles2 = (rows_x + 511) / 512 * by * batch;
  if (tiles2 < clusters) return 1;  // some clusters would idle
  const int64_t waves1 = (tiles1 + clusters - 1) / clusters;
  const int64_t waves2 = (tiles2 + clusters - 1) / clusters;
  return 2 * waves2 <= waves1 ? 2 : 1;
}

// L2 grouping width in cluster tiles along X (16, as the manual's final level).
inline constexpr int kGroupX = 16;

}  // namespace gemm::kernel::sm100
