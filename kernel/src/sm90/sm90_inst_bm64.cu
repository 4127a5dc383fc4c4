// Explicit instantiations of the SM90 kernel with the 64x256 and 64x128 decode tiles (both output
// dtypes, both B layouts, single-problem and grouped parameter blocks).
#include "sm90/sm90_launch.cuh"

namespace gemm::kernel::sm90 {

GEMM_SM90_INSTANTIATE_TILE(64, 256)
GEMM_SM90_INSTANTIATE_TILE(64, 128)

}  // namespace gemm::kernel::sm90
