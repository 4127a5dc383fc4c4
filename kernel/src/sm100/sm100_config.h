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

// One kernel variant. kUmmaN: N of the cta_group::2 UMMA (the cluster tile is 256 x kUmmaN,
// each CTA holds 128 rows of X, kUmmaN/2 rows of Y and a 128 x kUmmaN accumulator).
// kSwapAB: the small-M variant (B in the M slot, A in the N slot, transposed epilogue).
template <int kUmmaN_, bool kSwapAB_, bool kOutF32_>
struct KernelConfig {
  static constexpr int kUmmaM = 256;
  static constexpr int kUmmaN = kUmmaN_;
  static constexpr int kUmmaK = 16;  // 32 bytes of bf16: one MMA K-slice
  static constexpr bool kSwapAB = kSwapAB_;
  static constexpr bool kOutF32 = kOutF32_;
  static constexpr int kBlockK = 64;  // one 128-byte swizzle row of bf16
  static constexpr int kClusterBlockX = kUmmaM;
  static constexpr int kClusterBlockY = kUmmaN;
  static constexpr int kRowsX = kUmmaM / 2;  // per CTA
  static constexpr int kRowsY = kUmmaN / 2;  // per CTA
  static constexpr int kOutBytes = kOutF32 ? 4 : 2;

  static constexpr uint32_t kXStageBytes = kRowsX * kBlockK * 2;
  static constexpr uint32_t kYStageBytes = kRowsY * kBlockK * 2;
  static constexpr uint32_t kStageBytes = kXStageBytes + kYStageBytes;

  // Epilogue: each epilogue warp stages 32 rows in two 4 KiB buffers (double-buffered TMA store).
  // Wide kernel: 32 rows x 128 bytes, 128B-swizzled. Swap-AB: 32 M rows x 32 N columns.
  static constexpr int kEpiBuffers = 2;
  static constexpr uint32_t kEpiBufferBytes = 4096;
  static constexpr int kEpiColsPerChunk = kSwapAB ? 32 : 128 / kOutBytes;
  static constexpr int kEpiChunks = kUmmaN / kEpiColsPerChunk;
  static constexpr uint32_t kEpiChunkBytes =
      kSwapAB ? 32u * 32u * kOutBytes : 32u * 128u;  // bytes one TMA store moves

  // TMEM: two accumulators of kUmmaN columns (double buffer), power of two >= 32.
  static constexpr int kAccumStages = 2;
  static constexpr uint32_t kTmemCols = 2 * kUmmaN;

  // Barriers: full[S], empty[S], tmem_full[2], tmem_empty[2], c_full[4 warps][2 buffers].
  static constexpr uint32_t kNumBarriersFixed = 2 * kAccumStages + kNumEpilogueWarps * kEpiBuffers;
  static constexpr uint32_t kAlignPad = 1024;  // dynamic smem base rounded up to 1024 B
  static constexpr uint32_t kFixedBytes =
      kAlignPad + kNumEpilogueWarps * kEpiBuffers * kEpiBufferBytes + 256;  // + barriers/slot
  static constexpr int kMaxStages = 8;
  static constexpr int kStagesFit =
      static_cast<int>((kSmemPerBlockOptin - kFixedBytes) / kStageBytes);
  static constexpr int kStages = kStagesFit < kMaxStages ? kStagesFit : kMaxStages;

  // Offsets from the 1024-aligned base.
  static constexpr uint32_t kXOffset = 0;
  static constexpr uint32_t kYOffset = kXOffset + kStages * kXStageBytes;
  static constexpr uint32_t kEpiOffset = kYOffset + kStages * kYStageBytes;
  static constexpr uint32_t kBarrierOffset =
      kEpiOffset + kNumEpilogueWarps * kEpiBuffers * kEpiBufferBytes;
  static constexpr uint32_t kNumBarriers = 2 * kStages + kNumBarriersFixed;
  static constexpr uint32_t kTmemSlotOffset = kBarrierOffset + kNumBarriers * 8;
  static constexpr uint32_t kSmemBytes = kAlignPad + kTmemSlotOffset + 16;

  static_assert(kStages >= 2, "pipeline too shallow");
  static_assert(kSmemBytes <= kSmemPerBlockOptin, "shared memory over the SM100 limit");
  static_assert(kUmmaN % 32 == 0 && kUmmaN >= 64 && kUmmaN <= 256, "invalid UMMA N");
  static_assert(kEpiChunkBytes <= kEpiBufferBytes, "staging chunk too large");
  static_assert(kTmemCols <= 512, "TMEM has 512 columns");
};

// L2 grouping width in cluster tiles along X (seed 000 level 9: 16).
inline constexpr int kGroupX = 16;

}  // namespace gemm::kernel::sm100
