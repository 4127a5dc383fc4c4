// Host launcher of the SM90 persistent GEMM kernel for one compiled configuration. Explicitly
// instantiated in sm90_inst_*.cu (the only translation units that see the device code).
#pragma once

#include <cuda_runtime_api.h>

#include "sm90/sm90_params.h"

namespace gemm::kernel::sm90 {

// Launches Sm90GemmKernel<BM, BN, kF32Out, kBKN, P> over `params` (stages/cluster_m already set)
// with one CTA per SM (grid capped by how many clusters fit). Sets the kernel's dynamic
// shared-memory limit first. Returns the CUDA error of the attribute call or the launch.
template <int BM, int BN, bool kF32Out, bool kBKN, int P>
cudaError_t LaunchSm90(const KernelParams<P>& params, int sm_count, cudaStream_t stream,
                       int* grid_out);

}  // namespace gemm::kernel::sm90
