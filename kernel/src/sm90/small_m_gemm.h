// Small-M ("decode") path of the SM90 kernel family: D[M,N] = alpha * A[M,K] · op(B) + beta * C
// for M <= 128 and large N·K, where the time is the time to read B once. Swap-AB mma.sync
// (B's N dimension in the MMA's M slot, the few activation rows in its N slot), cp.async
// multi-stage pipelines, and split-K so that every SM streams B. Called by the SM90 dispatch.
//
// Split-K reduction: deterministic. Each split writes FP32 partials to the caller's workspace
// ([split][batch][M][N]); a second kernel (launched with programmatic dependent launch) sums
// the splits in a fixed order and applies alpha/beta/C. No atomics, so results are bit-identical
// from run to run. With too small a workspace the launch falls back to one split (no workspace).
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "gemm/kernel.h"

namespace gemm::kernel::sm90 {

// True when the small-M kernel should run `args` (1 <= M <= 128).
bool UseSmallM(const StridedBatch& args, int sm_count);

// Workspace bytes SmallMGemm uses for `args` on a device with `sm_count` SMs (0 when no split-K).
std::size_t SmallMWorkspaceBytes(const StridedBatch& args, int sm_count);

// Enqueues `args` on `stream`. Requires 1 <= M <= 128 and 16-byte aligned base pointers, row
// pitches and batch strides of A and B (INVALID_ARGUMENT otherwise). Uses opts.workspace for
// split-K partials when it holds SmallMWorkspaceBytes(); otherwise runs without split-K.
// CUDA launch errors come back as INTERNAL. Does not synchronize.
absl::Status SmallMGemm(const StridedBatch& args, cudaStream_t stream, const LaunchOptions& opts);

// Launch plan of one call: pure host arithmetic, exposed for unit tests and the benchmark.
struct SmallMPlan {
  int m_tile = 16;                  // activation rows per CTA tile: 16, 32, 64 or 128
  int n_tile = 128;                 // weight rows (N) per CTA tile
  int k_block = 64;                 // K elements per pipeline stage
  int splits = 1;                   // split-K factor (1: direct epilogue, no workspace)
  int64_t n_tiles = 0;              // ceil(N / n_tile)
  int64_t k_blocks = 0;             // ceil(K / k_block)
  std::size_t workspace_bytes = 0;  // FP32 partials when splits > 1
};

// Chooses the plan for `args` on `sm_count` SMs. `force_splits` > 0 overrides the split-K choice
// (clamped to [1, k_blocks]); used by tests and tuning.
SmallMPlan PlanSmallM(const StridedBatch& args, int sm_count, int force_splits = 0);

// Enqueues `args` with an explicit `plan` (from PlanSmallM). `workspace` must hold
// plan.workspace_bytes when plan.splits > 1. Same checks and errors as SmallMGemm.
absl::Status SmallMGemmWithPlan(const StridedBatch& args, const SmallMPlan& plan,
                                cudaStream_t stream, void* workspace, std::size_t workspace_bytes);

}  // namespace gemm::kernel::sm90
