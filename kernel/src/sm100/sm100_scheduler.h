// Persistent tile scheduler of the SM100 kernel: maps (cluster, iteration) to an output tile of a
// strided batch (all problems the same shape) or of a group (per-problem shapes), in grouped-L2
// order inside each problem. Every role of both CTAs of a cluster runs its own copy and gets the
// same sequence (it depends only on the cluster id). Pure, unit-tested on the CPU
// (tests/unit/sm100_scheduler_test.cc).
#pragma once

#include <cstdint>

#include "sm100/sm100_hd.h"

namespace gemm::kernel::sm100 {

// Shape of one problem as the kernel sees it: X is the operand in the MMA's M slot (A, or B when
// swapped), Y the one in the N slot. Also carries the problem's epilogue scalars.
struct ProblemShape {
  int32_t rows_x = 0;
  int32_t rows_y = 0;
  int32_t k = 0;
  float alpha = 1.0f;
  float beta = 0.0f;
  int32_t k_splits = 1;  // split-K: work units per tile, each a contiguous range of K blocks
};

// One unit of work: K blocks [k_block_begin, k_block_begin + num_k_blocks) of output tile
// (block_x, block_y) of problem `problem`; `split` numbers the K range (0 without split-K).
struct WorkTile {
  int32_t problem = 0;
  int32_t block_x = 0;
  int32_t block_y = 0;
  int32_t num_k_blocks = 0;
  int32_t k_block_begin = 0;
  int32_t split = 0;
};

// Cluster id of a CTA in a 1-D grid of 2-CTA clusters: both CTAs of a pair get the same id.
SM100_HD constexpr int32_t ClusterIdOf(int32_t block_idx) { return block_idx / 2; }

SM100_HD constexpr int32_t CeilDiv(int32_t a, int32_t b) { return (a + b - 1) / b; }

// Static round-robin over tiles: cluster c takes linear tiles c, c + num_clusters, ...
template <int kBlockX, int kBlockY, int kBlockK>
class TileScheduler {
 public:
  // `shapes` holds one shape (uniform = true: a strided batch of `num_problems` entries) or
  // `num_problems` shapes (a group). `group_x` is the grouped-L2 width in X blocks (>= 1).
  SM100_HD TileScheduler(const ProblemShape* shapes, int32_t num_problems, bool uniform,
                         int32_t group_x, int32_t cluster_id, int32_t num_clusters)
      : shapes_(shapes),
        num_problems_(num_problems),
        uniform_(uniform),
        group_x_(group_x < 1 ? 1 : group_x),
        num_clusters_(num_clusters),
        next_linear_(cluster_id) {
    if (!uniform_ && num_problems_ > 0) cur_tiles_ = TilesOf(shapes_[0]);
  }

  // Split-K factor actually used: between 1 and the number of K blocks.
  SM100_HD static int32_t SplitsOf(const ProblemShape& s) {
    const int32_t blocks = CeilDiv(s.k, kBlockK);
    const int32_t splits = s.k_splits < 1 ? 1 : s.k_splits;
    return splits < blocks ? splits : (blocks < 1 ? 1 : blocks);
  }

  // Number of work units (tiles x K splits) of one problem.
  SM100_HD static int64_t TilesOf(const ProblemShape& s) {
    return static_cast<int64_t>(CeilDiv(s.rows_x, kBlockX)) * CeilDiv(s.rows_y, kBlockY) *
           SplitsOf(s);
  }

  // Total tiles over all problems (host-side sizing of the grid).
  SM100_HD static int64_t TotalTiles(const ProblemShape* shapes, int32_t num_problems,
                                     bool uniform) {
    if (uniform) return num_problems > 0 ? TilesOf(shapes[0]) * num_problems : 0;
    int64_t total = 0;
    for (int32_t i = 0; i < num_problems; ++i) total += TilesOf(shapes[i]);
    return total;
  }

  // Writes this cluster's next tile to `*tile`; false when the cluster is done.
  SM100_HD bool Next(WorkTile* tile) {
    const int64_t linear = next_linear_;
    next_linear_ += num_clusters_;
    return TileAt(linear, tile);
  }

  // Writes work unit `linear` (0 .. TotalTiles-1, grouped-L2 order within each problem) to
  // `*tile`; false when `linear` is past the last one. The static round robin asks for
  // cluster_id, cluster_id + num_clusters, ...; the Cluster Launch Control scheduler asks for the
  // cluster id it was launched as, then for the ids of the clusters it cancelled (any order).
  SM100_HD bool TileAt(int64_t linear, WorkTile* tile) {
    if (linear < 0) return false;
    int32_t problem = 0;
    int64_t local = 0;
    if (uniform_) {
      if (num_problems_ <= 0) return false;
      const int64_t tiles = TilesOf(shapes_[0]);
      if (tiles <= 0) return false;
      problem = static_cast<int32_t>(linear / tiles);
      if (problem >= num_problems_) return false;
      local = linear - static_cast<int64_t>(problem) * tiles;
    } else {
      // The static schedule only moves forward, so the cursor does too; CLC ids may come in
      // any order: restart the walk when one lies before the cursor.
      if (linear < cur_start_) {
        cur_problem_ = 0;
        cur_start_ = 0;
        cur_tiles_ = num_problems_ > 0 ? TilesOf(shapes_[0]) : 0;
      }
      while (cur_problem_ < num_problems_ && linear >= cur_start_ + cur_tiles_) {
        cur_start_ += cur_tiles_;
        ++cur_problem_;
        cur_tiles_ = cur_problem_ < num_problems_ ? TilesOf(shapes_[cur_problem_]) : 0;
      }
      if (cur_problem_ >= num_problems_) return false;
      problem = cur_problem_;
      local = linear - cur_start_;
    }
    const ProblemShape& s = shapes_[uniform_ ? 0 : problem];
    // Split-K: the K range is the slowest-varying index of a problem's work units.
    const int32_t splits = SplitsOf(s);
    const int64_t tiles_2d = TilesOf(s) / splits;
    const int32_t split = static_cast<int32_t>(local / tiles_2d);
    local -= split * tiles_2d;
    const int32_t blocks_k = CeilDiv(s.k, kBlockK);
    const int32_t per_split = blocks_k / splits, extra = blocks_k % splits;
    tile->split = split;
    tile->k_block_begin = split * per_split + (split < extra ? split : extra);
    tile->num_k_blocks = per_split + (split < extra ? 1 : 0);
    const int32_t blocks_x = CeilDiv(s.rows_x, kBlockX);
    // Grouped L2 order: a group of group_x X-blocks walks Y column by column, so consecutive
    // clusters share the same Y block (operand Y stays hot in L2) and group_x X blocks.
    const int64_t tiles_per_group = static_cast<int64_t>(group_x_) * CeilDiv(s.rows_y, kBlockY);
    const int32_t group = static_cast<int32_t>(local / tiles_per_group);
    const int32_t first_x = group * group_x_;
    const int32_t group_size = blocks_x - first_x < group_x_ ? blocks_x - first_x : group_x_;
    const int32_t in_group = static_cast<int32_t>(local - group * tiles_per_group);
    tile->problem = problem;
    tile->block_x = first_x + in_group % group_size;
    tile->block_y = in_group / group_size;
    return true;
  }

 private:
  const ProblemShape* shapes_;
  int32_t num_problems_;
  bool uniform_;
  int32_t group_x_;
  int32_t num_clusters_;
  int64_t next_linear_;
  int32_t cur_problem_ = 0;
  int64_t cur_start_ = 0;
  int64_t cur_tiles_ = 0;
};

}  // namespace gemm::kernel::sm100
