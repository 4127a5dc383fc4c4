// Split-K of the SM90 persistent kernel's last, partial wave of cluster tiles, so that the SMs
// that wave would leave idle get work. Two plans:
//   Tail split: when the last wave would leave most SMs idle (e.g. 32 tiles of M=128, N=8192 on
//     132 SMs, or 3.4 waves of M=512, N=28672), its tiles are cut along K into `splits` equal
//     units each. Units in launch order: [0, dp_tiles) are whole tiles (tile u); then
//     tail_tiles * splits split units, split-major: unit dp_tiles + s * tail_tiles + i is split s
//     of tile dp_tiles + i. Split splits-1 owns the tile.
//   Stream-K: the K blocks of all tail tiles, in tile order, are shared evenly by the launch's
//     clusters (sk_clusters, one share each), so a wave of 1.7 tiles per cluster takes 1.7 tile
//     times instead of 2. A share covers the end of one tile, whole tiles, then the start of
//     another; each part is a unit: unit dp_tiles + j * sk_clusters + c is part j of cluster c's
//     share (empty past the share's last tile). The part holding a tile's K block 0 owns it.
// Every non-owner part writes its FP32 partial tile to a workspace slot group and publishes a
// flag; the owner waits for those flags, adds the partials and runs the epilogue. No deadlock:
// all CTAs of the persistent grid are co-resident, and every unit an owner waits for runs
// before anything its cluster could wait on (tail split: owners come last in launch order;
// stream-K: a share's only non-owner part is its first, and no owner waits on its own cluster).
// Pure arithmetic shared by host and device (plain C++ under a host compiler: unit-tested on the
// CPU).
#pragma once

#include <cstdint>

#include "scheduler.h"  // GEMM_HD

namespace gemm::kernel::sm90 {

// Split of one launch's cluster tiles.
struct SplitPlan {
  int64_t dp_tiles = 0;     // tiles run whole (all of them when nothing is split)
  int64_t tail_tiles = 0;   // tiles cut along K (0 when nothing is split)
  int32_t splits = 1;       // tail split: K pieces per tail tile (1: no tail split)
  int32_t sk_clusters = 0;  // stream-K: clusters sharing the tail's K blocks (0: no stream-K)
  int32_t sk_units = 0;     // stream-K: units per share (the most tail tiles one share touches)
  int32_t k_blocks = 0;     // stream-K: K blocks per tile (one problem: every tile has the same)
};

// Fewest K blocks (of 64) one split or stream-K share may get: below this the partial
// write/read costs more than the idle SMs it recovers.
inline constexpr int64_t kMinSplitKBlocks = 8;
// Most K pieces per tile (bounds the workspace and the owner's reduction).
inline constexpr int32_t kMaxSplits = 8;
// TileConfig::tail_splits value that asks for stream-K instead of a tail split.
inline constexpr int32_t kStreamKSplits = -1;

// Whether `plan` is stream-K; whether any unit of it exchanges partials.
GEMM_HD bool IsStreamK(const SplitPlan& plan) { return plan.sk_clusters > 0; }
GEMM_HD bool Exchanges(const SplitPlan& plan) { return plan.splits > 1 || IsStreamK(plan); }

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

// NOTE: the stream-K arithmetic is 32-bit (the kernel decodes a unit while its wgmmas run, and
// 64-bit divisions there made the 40-register producer spill): PlanStreamK keeps the tail's K
// blocks times the clusters below 2^31.

// K blocks of the stream-K tail (tail tile t's K block b is block t * k_blocks + b of it).
GEMM_HD uint32_t TailBlocks(const SplitPlan& plan) {
  return static_cast<uint32_t>(plan.tail_tiles) * static_cast<uint32_t>(plan.k_blocks);
}

// First K block of the stream-K tail in cluster `c`'s share; share c ends where c + 1 begins.
GEMM_HD uint32_t ShareBegin(const SplitPlan& plan, uint32_t c) {
  return TailBlocks(plan) * c / static_cast<uint32_t>(plan.sk_clusters);
}

// The cluster whose stream-K share holds K block `i` of the tail.
GEMM_HD uint32_t ShareOf(const SplitPlan& plan, uint32_t i) {
  return ((i + 1) * static_cast<uint32_t>(plan.sk_clusters) - 1) / TailBlocks(plan);
}

// Stream-K over the last, partial wave of `tiles` tiles of `k_blocks` K blocks on `slots`
// clusters, or no split when no wave is partial, the shares would get fewer than
// kMinSplitKBlocks K blocks, or the tail's K blocks times the clusters reach 2^31.
GEMM_HD SplitPlan PlanStreamK(int64_t tiles, int64_t k_blocks, int64_t slots) {
  SplitPlan plan;
  plan.dp_tiles = tiles;
  if (tiles <= 0 || slots <= 0 || k_blocks <= 0 || tiles % slots == 0) return plan;
  const int64_t tail = tiles % slots;
  if (tail * k_blocks < slots * kMinSplitKBlocks) return plan;
  if (k_blocks >= (int64_t{1} << 31) / (tail * slots)) return plan;
  plan.dp_tiles = tiles - tail;
  plan.tail_tiles = tail;
  plan.sk_clusters = static_cast<int32_t>(slots);
  plan.k_blocks = static_cast<int32_t>(k_blocks);
  int64_t most = 0;
  for (uint32_t c = 0; c < static_cast<uint32_t>(slots); ++c) {
    const int64_t first = ShareBegin(plan, c) / k_blocks;
    const int64_t last = (ShareBegin(plan, c + 1) - 1) / k_blocks;
    if (last - first + 1 > most) most = last - first + 1;
  }
  plan.sk_units = static_cast<int32_t>(most);
  return plan;
}

// The plan of a launch: stream-K when `forced_splits` is kStreamKSplits and `one_k` (every tile
// has the same K), PlanForcedTailSplit when it is > 0, else PlanTailSplit.
GEMM_HD SplitPlan PlanLaunchSplit(int64_t tiles, int64_t k_blocks, int64_t slots,
                                  int32_t forced_splits, bool one_k) {
  if (forced_splits == kStreamKSplits) {
    return one_k ? PlanStreamK(tiles, k_blocks, slots) : PlanTailSplit(tiles, k_blocks, slots);
  }
  return forced_splits > 0 ? PlanForcedTailSplit(tiles, k_blocks, slots, forced_splits)
                           : PlanTailSplit(tiles, k_blocks, slots);
}

// Work units of a launch.
GEMM_HD int64_t TotalUnits(const SplitPlan& plan) {
  if (IsStreamK(plan)) return plan.dp_tiles + int64_t{plan.sk_units} * plan.sk_clusters;
  return plan.dp_tiles + plan.tail_tiles * plan.splits;
}

// What one unit computes.
struct UnitWork {
  int64_t tile = 0;        // cluster tile (DecodeTile index)
  int32_t split = -1;      // -1: whole tile (or nothing); else a K piece (tail split: its
                           // index; stream-K: 0)
  int32_t tail_index = 0;  // tile - dp_tiles for split and stream-K units (< the clusters)
  int32_t share = -1;      // stream-K units: the cluster whose share it is part of; else -1
  int32_t kb_begin = 0;    // stream-K units: their K blocks (empty past the share's end)
  int32_t kb_end = 0;
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
  if (IsStreamK(plan)) {
    const uint32_t clusters = static_cast<uint32_t>(plan.sk_clusters);
    const uint32_t part = v / clusters;
    const uint32_t share = v - part * clusters;
    w.share = static_cast<int32_t>(share);
    const uint32_t kb = static_cast<uint32_t>(plan.k_blocks);
    const uint32_t begin = ShareBegin(plan, share), end = ShareBegin(plan, share + 1);
    uint32_t t = begin / kb + part;
    const uint32_t lo = begin > t * kb ? begin : t * kb;
    const uint32_t hi = end < (t + 1) * kb ? end : (t + 1) * kb;
    if (lo >= hi) t = static_cast<uint32_t>(plan.tail_tiles) - 1;  // empty: a valid tile
    w.tail_index = static_cast<int32_t>(t);
    w.tile = plan.dp_tiles + t;
    if (lo < hi) {
      w.kb_begin = static_cast<int32_t>(lo - t * kb);
      w.kb_end = static_cast<int32_t>(hi - t * kb);
    }
    // A whole tile, or an empty unit, exchanges nothing.
    w.split = lo >= hi || (w.kb_begin == 0 && w.kb_end == kb) ? -1 : 0;
    return w;
  }
  const uint32_t tail = static_cast<uint32_t>(plan.tail_tiles);
  w.split = static_cast<int32_t>(v / tail);
  w.tail_index = static_cast<int32_t>(v - static_cast<uint32_t>(w.split) * tail);
  w.tile = plan.dp_tiles + w.tail_index;
  return w;
}

// K blocks [*begin, *end) of `w` for a tile of `k_blocks` K blocks (empty for a stream-K unit
// past its share's end).
GEMM_HD void SplitKRange(const UnitWork& w, const SplitPlan& plan, int32_t k_blocks, int32_t* begin,
                         int32_t* end) {
  if (w.share >= 0) {
    *begin = w.kb_begin;
    *end = w.kb_end;
    return;
  }
  if (w.split < 0) {
    *begin = 0;
    *end = k_blocks;
    return;
  }
  const uint32_t splits = static_cast<uint32_t>(plan.splits);
  *begin = static_cast<int32_t>(static_cast<uint32_t>(w.split) * k_blocks / splits);
  *end = static_cast<int32_t>(static_cast<uint32_t>(w.split + 1) * k_blocks / splits);
}

// True for the unit that reduces the partials and stores the tile (and for whole tiles).
GEMM_HD bool IsOwner(const UnitWork& w, const SplitPlan& plan) {
  if (w.split < 0) return true;
  return w.share >= 0 ? w.kb_begin == 0 : w.split == plan.splits - 1;
}

// The slot group (one partial tile and flag per CTA of the cluster) a non-owner unit writes
// (groups number fewer than the launch's units: 32-bit).
GEMM_HD int32_t WriteGroup(const UnitWork& w, const SplitPlan& plan) {
  return w.share >= 0 ? w.share : w.tail_index * (plan.splits - 1) + w.split;
}

// The slot groups [*first, *first + *count) an owner unit adds (none for a whole tile or a
// non-owner).
GEMM_HD void ReadGroups(const UnitWork& w, const SplitPlan& plan, int32_t* first, int32_t* count) {
  *first = 0;
  *count = 0;
  if (w.split < 0 || !IsOwner(w, plan)) return;
  if (w.share >= 0) {
    // The shares after the owner's that hold K blocks of this tile, each with its first part.
    const uint32_t kb = static_cast<uint32_t>(plan.k_blocks);
    const int32_t last =
        static_cast<int32_t>(ShareOf(plan, (static_cast<uint32_t>(w.tail_index) + 1) * kb - 1));
    *first = w.share + 1;
    *count = last - w.share;
    return;
  }
  *first = w.tail_index * (plan.splits - 1);
  *count = plan.splits - 1;
}

// Workspace slot of CTA `rank` of a `cluster`-CTA cluster in slot group `group`.
GEMM_HD int64_t PartialSlot(int64_t group, int rank, int cluster) { return group * cluster + rank; }

// Slots a plan needs (partials are block_m * block_n floats each).
GEMM_HD int64_t PartialSlots(const SplitPlan& plan, int cluster) {
  if (IsStreamK(plan)) return int64_t{plan.sk_clusters} * cluster;
  return plan.tail_tiles * (plan.splits - 1) * cluster;
}

// Workspace bytes of a plan: one uint32 flag per slot (rounded to 256 bytes), then the partials.
GEMM_HD int64_t SplitFlagBytes(const SplitPlan& plan, int cluster) {
  return (PartialSlots(plan, cluster) * 4 + 255) / 256 * 256;
}
GEMM_HD int64_t SplitWorkspaceBytes(const SplitPlan& plan, int cluster, int block_m, int block_n) {
  if (!Exchanges(plan)) return 0;
  return SplitFlagBytes(plan, cluster) +
         PartialSlots(plan, cluster) * int64_t{block_m} * block_n * 4;
}

}  // namespace gemm::kernel::sm90
