// Explicit instantiations of the SM90 kernel's swap-AB tiles 128x64 to 128x160 (both output
// dtypes, B [N,K], single problems).
#include "sm90/sm90_launch.cuh"

namespace gemm::kernel::sm90 {

GEMM_SM90_INSTANTIATE_SWAP(64)
GEMM_SM90_INSTANTIATE_SWAP(80)
GEMM_SM90_INSTANTIATE_SWAP(96)
GEMM_SM90_INSTANTIATE_SWAP(112)
GEMM_SM90_INSTANTIATE_SWAP(128)
GEMM_SM90_INSTANTIATE_SWAP(144)
GEMM_SM90_INSTANTIATE_SWAP(160)

}  // namespace gemm::kernel::sm90
