// The tile shapes the SM90 kernel is compiled for and its shared-memory layout's size, shared by
// the device code, the launcher and the (CPU-tested) heuristics and variant list. No CUDA include.
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

// Shared memory a CTA may opt into on every SM90 part (227 KB).
inline constexpr int kSm90SmemOptin = 232448;
// The epilogue's own staging buffers: 8 consumer warps x two 16-row x 128-byte tiles.
inline constexpr int kEpilogueBufferBytes = 8 * 2 * 16 * 128;

// Whether the epilogue stages a unit's output in the unit's last pipeline slot, held until the
// stores have read it, instead of in buffers of its own. Only the swap-AB widths 192 and 208:
// dropping the buffers gives them a fifth slot. Against four (gemm_bench m_sweep, both layouts,
// twice each in one call): on the H200 each of the 20 rows that run one such tile per column of
// N (M = 177-208) ran 0.4-9.6% faster and the set 1.0004x; on the H100 the set 1.0014x. The other
// tiles where a slot would be freed measured slower with it (128x128 at 7 slots, 64x256 at 5,
// widths 144 and 160 at 6: 0.7-1.7% over their rows) and keep their buffers. The slot gives each
// consumer warpgroup 16 KB (the first's in its 128 A rows, the second's in the B rows).
constexpr bool EpilogueInSlot(int block_m, int block_n) {
  return block_m == 128 && (block_n == 192 || block_n == 208);
}

// Bytes of dynamic shared memory of one CTA of the kernel (the device's carve-up) with `stages`
// pipeline slots of a block_m x block_n tile (64 K per slot): alignment slack, the slots, the
// epilogue's buffers unless it stages in a slot, the full/empty barriers and the producer's
// 32-byte unit record.
constexpr int Sm90SmemBytes(int block_m, int block_n, int stages) {
  return 1024 + stages * (block_m + block_n) * 64 * 2 +
         (EpilogueInSlot(block_m, block_n) ? 0 : kEpilogueBufferBytes) + 2 * stages * 8 + 32;
}

static_assert(Sm90SmemBytes(128, 192, 5) <= kSm90SmemOptin &&
                  Sm90SmemBytes(128, 208, 5) <= kSm90SmemOptin,
              "the in-slot epilogue's fifth slot fits");

}  // namespace gemm::kernel::sm90
