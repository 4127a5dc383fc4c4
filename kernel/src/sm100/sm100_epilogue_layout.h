// Address math of the SM100 epilogue: tensor-memory addresses of a warp's accumulator slice and
// byte offsets inside the SMEM staging tiles that the TMA store reads (128B-swizzled tiles for the
// wide kernel, plain transposed tiles for the small-M swap-AB kernel). Pure, unit-tested on the
// CPU (tests/unit/sm100_epilogue_test.cc).
#pragma once

#include <cstdint>

#include "sm100/sm100_hd.h"

namespace gemm::kernel::sm100 {

// Tensor memory address: lane in bits 16-31, column in bits 0-15 (PTX ISA, tensor memory
// addressing; tcgen05 for dummies: "16 MSBs encode row, 16 LSBs encode column").
SM100_HD constexpr uint32_t TmemAddr(uint32_t base, uint32_t lane, uint32_t column) {
  return base + (lane << 16) + column;
}

// First TMEM lane a warp may access with tcgen05.ld: warp w reaches lanes 32*(w%4) .. +31.
SM100_HD constexpr uint32_t WarpTmemLane(uint32_t warp_idx) { return (warp_idx % 4u) * 32u; }

// TMEM column of M-wave `wave` of accumulator `acc` (kMWaves waves of umma_n FP32 columns per
// accumulator): DeepGEMM's `accum_stage_idx * kNumMWaves * BLOCK_N + w * BLOCK_N` (each M-wave
// writes separate TMEM columns).
SM100_HD constexpr uint32_t AccumColumn(uint32_t acc, uint32_t wave, uint32_t umma_n,
                                        uint32_t waves) {
  return (acc * waves + wave) * umma_n;
}

// First output row (X index) of the 32 rows that epilogue warp quarter `quarter` (0..3) of CTA
// `rank` drains for M-wave `wave`: the CTA loaded X rows block_x * cluster_rows + rank *
// rows_per_cta ... + rows_per_cta (one TMA box), and wave w's UMMA (M = 256 over the pair) read
// rows w*128 .. +128 of each CTA's X stage into TMEM lanes 0..127 of that CTA, lane = row - w*128.
SM100_HD constexpr int64_t EpilogueRow(int64_t block_x, int32_t cluster_rows, uint32_t rank,
                                       int32_t rows_per_cta, uint32_t wave, uint32_t quarter) {
  return block_x * cluster_rows + static_cast<int64_t>(rank) * rows_per_cta +
         static_cast<int64_t>(wave) * 128 + 32 * static_cast<int64_t>(quarter);
}

// CuTe Swizzle<3,4,3> on a byte offset: bits 4-6 ^= bits 7-9 (the 128B mode of TMA and of the
// tcgen05 canonical layouts, PTX ISA "Swizzle<3, 4, 3>").
SM100_HD constexpr uint32_t Swizzle128B(uint32_t byte_offset) {
  return byte_offset ^ (((byte_offset >> 7) & 7u) << 4);
}

// Byte offset of 16-byte chunk `chunk` (0..7) of row `row` in a 1024-byte-aligned tile of
// 128-byte rows written with CU_TENSOR_MAP_SWIZZLE_128B.
// NOTE: a thread owns one row; the 8 threads of a quarter-warp store the same logical chunk of 8
// consecutive rows, which land in 8 different 16-byte bank groups: no bank conflicts.
SM100_HD constexpr uint32_t SwizzledChunkOffset(uint32_t row, uint32_t chunk) {
  return row * 128u + ((chunk ^ (row & 7u)) << 4);
}

// Byte offset of element (m, n) in the swap-AB staging tile [32 rows of M][32 columns of N]
// (no swizzle; a thread owns one n, so a warp's stores to one m are consecutive words).
SM100_HD constexpr uint32_t TransposedOffset(uint32_t m, uint32_t n, uint32_t elem_bytes) {
  return (m * 32u + n) * elem_bytes;
}

}  // namespace gemm::kernel::sm100
