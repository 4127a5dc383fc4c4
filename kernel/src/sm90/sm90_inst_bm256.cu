// Explicit instantiations of the SM90 kernel with a 256x128 tile (both output dtypes, both B
// layouts, single-problem and grouped parameter blocks).
#include "sm90/sm90_launch.cuh"

namespace gemm::kernel::sm90 {

GEMM_SM90_INSTANTIATE_TILE(256, 128)

}  // namespace gemm::kernel::sm90
