// Explicit instantiations of the SM90 kernel with a 128x256 tile (both output dtypes, both B
// layouts, single-problem and grouped parameter blocks).
#include "sm90/sm90_launch.cuh"

namespace gemm::kernel::sm90 {

#define GEMM_SM90_INST(F32, KN, P)                                                                 \
  template cudaError_t LaunchSm90<128, 256, F32, KN, P>(const KernelParams<P>&, int, cudaStream_t, \
                                                        int*, const SplitWorkspace&, int*);
GEMM_SM90_INST(false, false, 1)
GEMM_SM90_INST(false, true, 1)
GEMM_SM90_INST(true, false, 1)
GEMM_SM90_INST(true, true, 1)
GEMM_SM90_INST(false, false, kMaxGroupPerLaunch)
GEMM_SM90_INST(false, true, kMaxGroupPerLaunch)
GEMM_SM90_INST(true, false, kMaxGroupPerLaunch)
GEMM_SM90_INST(true, true, kMaxGroupPerLaunch)
#undef GEMM_SM90_INST

}  // namespace gemm::kernel::sm90
