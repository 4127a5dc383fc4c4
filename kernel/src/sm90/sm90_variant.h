// The SM90 family's compiled variants, as qualification and the usable-variant mask name them
// (bit i of LaunchOptions::usable_variants): the WGMMA kernel's five tile shapes (each compiled
// for both output dtypes, both B layouts, single and grouped parameter blocks; split-K is a
// runtime mode of the same code), the small-M kernel, then the swap-AB tiles (128 x each of
// kSwapWidths; both output dtypes and B layouts, single problems). No CUDA include.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>

#include "sm90/sm90_tiles.h"

namespace gemm::kernel::sm90 {

inline constexpr int kNumTileVariants = 5;
inline constexpr int kSmallMVariant = kNumTileVariants;  // the small-M (decode) kernel
inline constexpr int kFirstSwapVariant = kSmallMVariant + 1;
inline constexpr int kNumSwapVariants = static_cast<int>(std::size(kSwapWidths));
inline constexpr int kNumVariants = kFirstSwapVariant + kNumSwapVariants;

// block_m x block_n of tile variant i (the order of the instantiations in sm90_gemm.cc).
inline constexpr int kVariantTiles[kNumTileVariants][2] = {
    {128, 256}, {256, 128}, {128, 128}, {64, 256}, {64, 128}};

// The variant index of a block_m x block_n tile (swap-AB when `swap_ab`), or -1 for a shape that
// is not compiled.
constexpr int TileVariant(int block_m, int block_n, bool swap_ab = false) {
  if (swap_ab) {
    for (int i = 0; i < kNumSwapVariants; ++i) {
      if (block_m == 128 && kSwapWidths[i] == block_n) return kFirstSwapVariant + i;
    }
    return -1;
  }
  for (int i = 0; i < kNumTileVariants; ++i) {
    if (kVariantTiles[i][0] == block_m && kVariantTiles[i][1] == block_n) return i;
  }
  return -1;
}

// Whether variant `i` is a swap-AB tile.
constexpr bool IsSwapVariant(int i) { return i >= kFirstSwapVariant && i < kNumVariants; }

// "sm90.wgmma_128x256", ..., "sm90.small_m", "sm90.wgmma_swap_128x64", ...
inline std::string VariantName(int i) {
  if (i == kSmallMVariant) return "sm90.small_m";
  if (IsSwapVariant(i)) {
    return "sm90.wgmma_swap_128x" + std::to_string(kSwapWidths[i - kFirstSwapVariant]);
  }
  return "sm90.wgmma_" + std::to_string(kVariantTiles[i][0]) + "x" +
         std::to_string(kVariantTiles[i][1]);
}

// Whether `usable_variants` allows variant `i` (-1: never).
constexpr bool VariantAllowed(uint64_t usable_variants, int i) {
  return i >= 0 && ((usable_variants >> i) & 1u) != 0;
}

}  // namespace gemm::kernel::sm90
