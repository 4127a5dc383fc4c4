// Tail split-K of the SM90 persistent kernel: when the last wave of cluster tiles would leave
// most SMs idle (e.g. 32 tiles of M=128, N=8192 on 132 SMs, or 3.4 waves of M=512, N=28672),
// the tiles of that wave are cut along K into `splits` units each so every cluster has work.
//
// Work units in launch order: [0, dp_tiles) are whole tiles (tile u); then tail_tiles * splits
// split units, split-major: unit dp_tiles + s * tail_tiles + i is split s of tile dp_tiles + i.
// Splits 0..splits-2 write their FP32 partial tile to the workspace and publish a flag; split
// splits-1 (the owner) waits for those flags, adds the partials and runs the epilogue. Owners
// come last in launch order and all CTAs of the persistent grid are co-resident, so every unit
// an owner waits for is already running or done: no deadlock. Pure arithmetic shared by host and
// device (plain C++ under a host compiler: unit-tested on the CPU).
#pragma once

#include <cstdint>

#include "scheduler.h"  // GEMM_HD

namespace gemm::kernel::sm90 {

// Split of one launch's cluster tiles.
struct SplitPlan {
  int64_t dp_tiles = 0;    // tiles run whole (all of them when splits == 1)
  int64_t tail_tiles = 0;  // tiles cut along K (0 when splits == 1)
  int32_t splits = 1;      // K pieces per tail tile
};

// Fewest K blocks (of 64) one split may get: below this the partial write/read costs more than
// the idle SMs it recovers.
inline constexpr int64_t kMinSplitKBlocks = 8;
// Most K pieces per tile (bounds the workspace and the owner's reduction).
inline constexpr int32_t kMaxSplits = 8;

// The last, partial wave of `tiles` cluster tiles over `slots` clusters cut into `splits` K
// pieces per tile (whole waves run unsplit; no split when splits < 2 or no wave is partial).
GEMM_HD SplitPlan CutTail(int64_t tiles, int64_t slots, int64_t splits) {
  SplitPlan plan;
  plan.dp_tiles = tiles;
  if (tiles <= 0 || slots <= 0 || splits < 2 || tiles % slots == 0) return plan;
  plan.tail_tiles = tiles % slots;
  plan.dp_tiles = tiles - plan.tail_tiles;
  plan.splits = static_cast<int32_t>(splits);
  return plan;
}

// Plans `tiles` cluster tiles of `k_blocks` K blocks each over `slots` co-resident clusters.
// Splits only the last, partial wave, and only when at least 2 pieces fit per tile.
GEMM_HD SplitPlan PlanTailSplit(int64_t tiles, int64_t k_blocks, int64_t slots) {
  const int64_t rem = tiles > 0 && slots > 0 ? tiles % slots : 0;
  int64_t splits = rem > 0 ? slots / rem : 1;
  if (splits > kMaxSplits) splits = kMaxSplits;
  if (splits > k_blocks / kMinSplitKBlocks) splits = k_blocks / kMinSplitKBlocks;
  return CutTail(tiles, slots, splits);
}

// PlanTailSplit with the K pieces per tail tile set to `splits` (clamped to [1, kMaxSplits] and
// to one K block per piece) instead of derived from the idle slots: the tail wave may then need
// more than one wave of units. A tuning choice (TileConfig::tail_splits); splits <= 1: no split.
GEMM_HD SplitPlan PlanForcedTailSplit(int64_t tiles, int64_t k_blocks, int64_t slots,
                                      int32_t splits) {
  int64_t s = splits < kMaxSplits ? splits : kMaxSplits;
  if (s > k_blocks) s = k_blocks;
  return CutTail(tiles, slots, s);
}

// The plan of a launch: PlanForcedTailSplit when `forced_splits` > 0, else PlanTailSplit.
GEMM_HD SplitPlan PlanLaunchSplit(int64_t tiles, int64_t k_blocks, int64_t slots,
                                  int32_t forced_splits) {
  return forced_splits > 0 ? PlanForcedTailSplit(tiles, k_blocks, slots, forced_splits)
                           : PlanTailSplit(tiles, k_blocks, slots);
}

// Work units of a launch.
GEMM_HD int64_t TotalUnits(const SplitPlan& plan) {
  return plan.dp_tiles + plan.tail_tiles * plan.splits;
}

// What one unit computes.
struct UnitWork {
  int64_t tile = 0;        // cluster tile (DecodeTile index)
  int32_t split = -1;      // -1: whole tile; else the K piece
  int64_t tail_index = 0;  // tile - dp_tiles for split units
};

// Decodes unit `unit` (below TotalUnits(plan)): its tile and K piece.
GEMM_HD UnitWork DecodeUnit(int64_t unit, const SplitPlan& plan) {
  UnitWork w;
  if (unit < plan.dp_tiles) {
    w.tile = unit;
    return w;
  }
  // 32-bit arithmetic: the launcher keeps TotalUnits below kMaxTiles.
  const uint32_t v = static_cast<uint32_t>(unit - plan.dp_tiles);
  const uint32_t tail = static_cast<uint32_t>(plan.tail_tiles);
  w.split = static_cast<int32_t>(v / tail);
  w.tail_index = v - static_cast<uint32_t>(w.split) * tail;
  w.tile = plan.dp_tiles + w.tail_index;
  return w;
}

// K blocks [*begin, *end) of `w` for a tile of `k_blocks` K blocks.
GEMM_HD void SplitKRange(const UnitWork& w, const SplitPlan& plan, int32_t k_blocks, int32_t* begin,
                         int32_t* end) {
  if (w.split < 0) {
    *begin = 0;
    *end = k_blocks;
    return;
  }
  const uint32_t splits = static_cast<uint32_t>(plan.splits);
  *begin = static_cast<int32_t>(static_cast<uint32_t>(w.split) * k_blocks / splits);
  *end = static_cast<int32_t>(static_cast<uint32_t>(w.split + 1) * k_blocks / splits);
}

// True for the split that reduces the partials and stores the tile.
GEMM_HD bool IsOwner(const UnitWork& w, const SplitPlan& plan) {
  return w.split < 0 || w.split == plan.splits - 1;
}

// Workspace slot (partial tile + flag) written by non-owner split `split` of tail tile
// `tail_index`, for CTA `rank` of a `cluster`-CTA cluster.
GEMM_HD int64_t PartialSlot(int64_t tail_index, int32_t split, const SplitPlan& plan, int rank,
                            int cluster) {
  return (tail_index * (plan.splits - 1) + split) * cluster + rank;
}

// Slots a plan needs (partials are block_m * block_n floats each).
GEMM_HD int64_t PartialSlots(const SplitPlan& plan, int cluster) {
  return plan.tail_tiles * (plan.splits - 1) * cluster;
}

// Workspace bytes of a plan: one uint32 flag per slot (rounded to 256 bytes), then the partials.
GEMM_HD int64_t SplitFlagBytes(const SplitPlan& plan, int cluster) {
  return (PartialSlots(plan, cluster) * 4 + 255) / 256 * 256;
}
GEMM_HD int64_t SplitWorkspaceBytes(const SplitPlan& plan, int cluster, int block_m, int block_n) {
  if (plan.splits < 2) return 0;
  return SplitFlagBytes(plan, cluster) +
         PartialSlots(plan, cluster) * int64_t{block_m} * block_n * 4;
}

}  // namespace gemm::kernel::sm90
