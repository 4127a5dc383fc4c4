// Small-M ("decode") path of the SM90 kernel family: D[M,N] = alpha * A[M,K] · op(B) + beta * C
// for M <= 128 and large N·K, where the time is the time to read B once. Swap-AB mma.sync
// (B's N dimension in the MMA's M slot, the few activation rows in its N slot), cp.async
// multi-stage pipelines, and split-K so that every SM streams B. Called by the SM90 dispatch.
//
// Work split: stream-K. The iteration space (batch entry, 128-row weight tile, 64-wide K block)
// is cut into one contiguous range per CTA, one or two CTAs per SM, so every SM streams the same
// number of B bytes for any shape. Tiles shared by several CTAs are reduced deterministically:
// each CTA writes FP32 partials to the caller's workspace (at most two tiles per CTA) and a
// fixup kernel (launched with programmatic dependent launch) sums them in CTA order and applies
// alpha/beta/C. No atomics: results are bit-identical from run to run. With too small a
// workspace the launch falls back to one CTA per tile (no partials, no workspace).
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gemm/kernel.h"

namespace gemm::kernel::sm90 {

// Largest M the dispatch sends to the small-M kernel (SmallMGemm itself accepts M <= 128).
// Above it the WGMMA kernel with its 64-row decode tiles and tail split-K is faster: measured on
// H200 (gemm_bench --sm90_main vs the dispatch, N/K in {8192, 28672}, both layouts,
// summed time of the 6 shapes, WGMMA vs small-M): M=8 0.575 vs 0.550 ms, M=16 0.572 vs 0.563,
// M=24 0.574 vs 0.592, M=32 0.572 vs 0.609, M=40 0.570 vs 0.641.
inline constexpr int64_t kSmallMMaxRows = 16;

// Most weight bytes (batch x N x K x 2) the dispatch sends to the small-M kernel. Heavier
// weights stream faster through the WGMMA kernel's 64-row decode tiles; lighter ones, which
// those tiles cover with too few CTAs even after their tail split (at most 8 K pieces a tile),
// stream faster through the small-M kernel's stream-K grid. Measured with gemm_bench --sm90_main
// against the dispatch (M = 1, 8, 16; both layouts; the decode and m_sweep sets and 14 narrow
// and batched shapes), WGMMA time / small-M time: H200 1.29-1.66 at N <= 512 (2.6-3.1 at
// 128x65536), 1.04-1.19 at 34 MB, 1.00-1.06 at 50 MB, 0.95-1.03 at 67 MB, 0.95-1.00 at
// 4096x4096 x 4 (134 MB) and 0.70-0.99 on the shapes of 117 MB or more (8192x8192 to
// 28672x8192); H100 1.20-1.50 (2.3-2.8), 1.04-1.18, 0.98-1.03, 0.98-1.01, 0.98-0.99 and 0.89-1.00.
inline constexpr double kSmallMMaxWeightBytes = 64.0 * (1 << 20);

// True when the small-M kernel should run a problem of this shape: 1 <= M <= kSmallMMaxRows,
// N and K >= 1, and at most kSmallMMaxWeightBytes of weights (all `batch` entries).
bool UseSmallM(int64_t m, int64_t n, int64_t k, int64_t batch);

// UseSmallM of `args`' shape.
bool UseSmallM(const StridedBatch& args);

// Workspace bytes SmallMGemm uses for `args` on a device with `sm_count` SMs (0 when no split-K).
std::size_t SmallMWorkspaceBytes(const StridedBatch& args, int sm_count);

// Enqueues `args` on `stream`. Requires 1 <= M <= 128 and 16-byte aligned base pointers, row
// pitches and batch strides of A and B (INVALID_ARGUMENT otherwise). Uses opts.workspace for
// split-K partials when it holds SmallMWorkspaceBytes(); otherwise runs without split-K.
// CUDA launch errors come back as INTERNAL. Does not synchronize.
absl::Status SmallMGemm(const StridedBatch& args, cudaStream_t stream, const LaunchOptions& opts);

// How many clusters of 2, 4 and 8 CTAs of the 16-row kernel fit on the device at once
// (cudaOccupancyMaxActiveClusters); 0 where unknown.
struct SmallMClusterLimits {
  int64_t of2 = 0, of4 = 0, of8 = 0;
  // The limit for clusters of `cs` CTAs (0 for sizes other than 2, 4 and 8).
  int64_t For(int cs) const { return cs == 2 ? of2 : cs == 4 ? of4 : cs == 8 ? of8 : 0; }
};

// Queries the limits for the current device (cached per device). Where the query fails (a device
// without clusters) the limits are zero, and the CUDA error is cleared.
absl::StatusOr<SmallMClusterLimits> QuerySmallMClusterLimits();

// Launch plan of one call: pure host arithmetic, exposed for unit tests and the benchmark.
struct SmallMPlan {
  int m_tile = 16;           // activation rows per tile: 16, 32, 64 or 128
  int n_tile = 128;          // weight rows (N) per tile
  int k_block = 64;          // K elements per pipeline stage
  int64_t n_tiles = 0;       // ceil(N / n_tile)
  int64_t k_blocks = 0;      // ceil(K / k_block)
  int64_t total_iters = 0;   // batch * n_tiles * k_blocks
  int64_t ctas = 0;          // grid size; CTA c runs iterations [c*total/ctas, (c+1)*total/ctas)
  bool split_tiles = false;  // some tile is shared by several CTAs (fixup kernel runs)
  // > 1: the CTAs of each cluster of cluster_k (2, 4 or 8) split one tile's K and add their
  // partials through distributed shared memory: no workspace, no fixup kernel.
  int cluster_k = 1;
  std::size_t workspace_bytes = 0;  // FP32 partials, ctas * 2 * M * n_tile * 4, when split
};

// Chooses the plan for `args` on `sm_count` SMs. `force_ctas` > 0 overrides the grid size
// (clamped to [1, total_iters]); used by tests and tuning. With `clusters` (and no forced size)
// a 16-row tile may instead get a tile-aligned grid that needs no fixup: one CTA per tile, or
// clusters splitting each tile's K, when that fills at least 95% of the SMs, the clusters fit at
// once and, for B [K,N], the idle SMs' share of B costs less than the fixup would. Without
// `clusters`, always stream-K (whose workspace covers every plan).
SmallMPlan PlanSmallM(const StridedBatch& args, int sm_count, int64_t force_ctas = 0,
                      const SmallMClusterLimits* clusters = nullptr);

// Enqueues `args` with an explicit `plan` (from PlanSmallM). `workspace` must hold
// plan.workspace_bytes (else the call runs one CTA per tile). Same checks and errors as SmallMGemm.
absl::Status SmallMGemmWithPlan(const StridedBatch& args, const SmallMPlan& plan,
                                cudaStream_t stream, void* workspace, std::size_t workspace_bytes);

}  // namespace gemm::kernel::sm90
