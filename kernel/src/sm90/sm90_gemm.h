// Host entry points of the SM90 (H100/H200) persistent warp-specialized WGMMA kernel, called by
// the kernel library's dispatch for compute capability 9.0.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "gemm/kernel.h"
#include "heuristics_sm90.h"
#include "sm90/sm90_launch.h"
#include "sm90/sm90_params.h"

namespace gemm::kernel::sm90 {

// Whether the kernel can run the problem(s): TMA needs 16-byte aligned bases, pitches and batch
// strides. Arguments must already be validated.
bool Supports(const StridedBatch& args);
bool Supports(std::span<const Problem> group);

// One persistent launch of a strided batch, planned ahead: the instantiation and its parameters
// (TMA descriptors, tile order, split plan), all but the split epoch, which Launch sets.
struct PreparedLaunch {
  LaunchShape shape;
  KernelParams<1> params;
};

// Plans a validated strided batch as one persistent launch on the current device: the
// configuration (UNIMPLEMENTED when its variant is not in opts.usable_variants), the descriptors
// and the split over opts.workspace. Enqueues nothing.
absl::Status Prepare(const StridedBatch& args, const LaunchOptions& opts, PreparedLaunch* out);

// Enqueues a prepared launch on `stream` (of the device it was prepared on), with a fresh split
// epoch: one preparation may be launched again once the previous launch has left its workspace.
absl::Status Launch(const PreparedLaunch& launch, cudaStream_t stream);

// Enqueues a validated strided batch on `stream` as one persistent launch (Prepare, Launch).
absl::Status Gemm(const StridedBatch& args, cudaStream_t stream, const LaunchOptions& opts);

// Enqueues a validated group as persistent launches of up to kMaxGroupPerLaunch problems each.
absl::Status GemmGrouped(std::span<const Problem> group, cudaStream_t stream,
                         const LaunchOptions& opts);

// Workspace the calls above need, in bytes: the partial tiles of a tail split or stream-K (the
// descriptors travel as kernel parameters).
std::size_t WorkspaceBytes(const StridedBatch& args);
std::size_t WorkspaceBytes(std::span<const Problem> group);

// Tuning hook for benchmarks and timing experiments: fields > 0 (tail_splits: != 0) replace the
// heuristics' choice (and debug_flags, see sm90_params.h, is passed to the kernel). Process-wide;
// not for production paths. ClearTuningOverride() restores the heuristics.
struct TuningOverride {
  int block_n = 0, stages = 0, cluster_m = 0, group_m = 0;
  int debug_flags = 0;
  int block_m = 0;
  int tail_splits = 0;  // K pieces per tile of the last partial wave, or -1 for stream-K
                        // (TileConfig::tail_splits)
  int swap_ab = 0;      // 1: swap-AB tiles (TileConfig::swap_ab), -1: never, 0: as
                        // chosen
};
void SetTuningOverride(const TuningOverride& o);
void ClearTuningOverride();

// "block_n=256 stages=4 cluster_m=2 group_m=8 grid=132" for the last launch this thread planned
// (Prepare, Gemm or GemmGrouped).
std::string LastLaunchDescription();

}  // namespace gemm::kernel::sm90
