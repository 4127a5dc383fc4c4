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
  uint32_t epoch = 0;         // NextSplitEpoch(): what this launch's flags are set to
  int32_t forced_splits = 0;  // TileConfig::tail_splits (0: PlanTailSplit decides)
};

// A value for SplitWorkspace::epoch, distinct for every call in this process (so a workspace
// reused by a later launch never reads an earlier launch's flags as set) and never 0 (the value
// of zeroed memory). Thread-safe.
uint32_t NextSplitEpoch();

// Launches Sm90GemmKernel<BM, BN, kF32Out, kBKN, P, kSwap> over `params` (stages/cluster_m already
// set; the split fields as FinishParams leaves them: no split) with one CTA per SM (grid capped by
// how many clusters fit). The launch splits its last partial wave along K when `ws` holds the
// plan's partials and kDebugNoSplit is not set, writing the plan into the split fields of `params`.
// Sets the kernel's dynamic shared-memory limit first. Returns the CUDA error of the attribute
// call or the launch; *split_out (if set) gets the K pieces per tail tile.
template <int BM, int BN, bool kF32Out, bool kBKN, int P, bool kSwap = false>
cudaError_t LaunchSm90(KernelParams<P>& params, int sm_count, cudaStream_t stream, int* grid_out,
                       const SplitWorkspace& ws, int* split_out);

}  // namespace gemm::kernel::sm90
