// Explicit instantiations of the SM90 kernel's swap-AB tiles 128x144 to 128x176 (both output
// dtypes and B layouts, single problems).
#include "sm90/sm90_launch.cuh"

namespace gemm::kernel::sm90 {

GEMM_SM90_INSTANTIATE_SWAP(144)
GEMM_SM90_INSTANTIATE_SWAP(160)
GEMM_SM90_INSTANTIATE_SWAP(176)

}  // namespace gemm::kernel::sm90
