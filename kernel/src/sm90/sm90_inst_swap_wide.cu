// Explicit instantiations of the SM90 kernel's swap-AB tiles 128x192 to 128x240 (both output
// dtypes and B layouts, single problems).
#include "sm90/sm90_launch.cuh"

namespace gemm::kernel::sm90 {

GEMM_SM90_INSTANTIATE_SWAP(192)
GEMM_SM90_INSTANTIATE_SWAP(208)
GEMM_SM90_INSTANTIATE_SWAP(224)
GEMM_SM90_INSTANTIATE_SWAP(240)

}  // namespace gemm::kernel::sm90
