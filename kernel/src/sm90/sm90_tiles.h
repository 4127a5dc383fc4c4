// The tile shapes the SM90 kernel is compiled for, shared by the device code, the launcher and
// the (CPU-tested) heuristics and variant list. No CUDA include.
#pragma once

namespace gemm::kernel::sm90 {

// The CTA tiles (block_m x block_n) the kernel is compiled for: 128x256, 256x128 and 128x128;
// 64x256 and 64x128 for decode rows (the consumer warpgroups split the columns).
constexpr bool IsSm90Tile(int block_m, int block_n) {
  return (block_m == 128 && (block_n == 128 || block_n == 256)) ||
         (block_m == 256 && block_n == 128) ||
         (block_m == 64 && (block_n == 128 || block_n == 256));
}

// The swap-AB tiles (TileConfig::swap_ab): the kernel multiplies B [N,K] by A [M,K] (N in the
// WGMMA's M slot), so the tile is 128 rows of N by block_n rows of M; block_n is a multiple of 16
// (WGMMA n; a 2-CTA cluster's half of the A box stays 1024-byte aligned) from 144 to 240, the
// widths the heuristics choose (SwapRule).
inline constexpr int kSwapWidths[] = {144, 160, 176, 192, 208, 224, 240};
constexpr bool IsSm90SwapTile(int block_m, int block_n) {
  if (block_m != 128) return false;
  for (int w : kSwapWidths) {
    if (w == block_n) return true;
  }
  return false;
}

}  // namespace gemm::kernel::sm90
