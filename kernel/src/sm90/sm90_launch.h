// Host launcher of the SM90 persistent GEMM kernel for one compiled configuration. Explicitly
// instantiated in sm90_inst_*.cu (the only translation units that see the device code).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "sm90/sm90_params.h"

namespace gemm::kernel::sm90 {

// Device scratch a launch may use for the tail split-K (sm90_split.h); null: no split.
struct SplitWorkspace {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  int32_t forced_splits = 0;  // TileConfig::tail_splits (0: PlanTailSplit decides; -1: stream-K)
};

// A value for KernelParams::epoch, distinct for every launch in this process (so a workspace
// reused by a later launch never reads an earlier launch's flags as set) and never 0 (the value
// of zeroed memory). Thread-safe.
uint32_t NextSplitEpoch();

// How one planned launch runs: the instantiation, its grid, dynamic shared memory and cluster.
struct LaunchShape {
  const void* kernel = nullptr;  // &Sm90GemmKernel<...>, whose one argument is KernelParams<P>
  unsigned grid = 0;             // CTAs
  unsigned threads = 0;          // per CTA
  int smem = 0;                  // dynamic shared memory bytes
  int cluster = 1;               // CTAs per cluster (along M)
  int splits = 1;                // K pieces per tile of the last partial wave
  bool stream_k = false;         // the last partial wave is shared out as stream-K
};

// Plans a launch of Sm90GemmKernel<BM, BN, kF32Out, kBKN, P, kSwap> over `params` (stages and
// cluster_m already set; the split fields as FinishParams leaves them: no split) with one CTA per
// SM (grid capped by how many clusters fit). The launch splits its last partial wave along K when
// `ws` holds the plan's partials and kDebugNoSplit is not set, writing the plan into the split
// fields of `params` (all but epoch, which each enqueue sets). Raises the kernel's dynamic
// shared-memory limit first. Returns the CUDA error of the attribute call.
template <int BM, int BN, bool kF32Out, bool kBKN, int P, bool kSwap = false>
cudaError_t PlanSm90(KernelParams<P>& params, int sm_count, const SplitWorkspace& ws,
                     LaunchShape* shape);

// Enqueues a planned launch on `stream`; `params` is the KernelParams<P> it was planned over,
// with its epoch set. Returns the launch's CUDA error.
cudaError_t EnqueueSm90(const LaunchShape& shape, const void* params, cudaStream_t stream);

}  // namespace gemm::kernel::sm90
