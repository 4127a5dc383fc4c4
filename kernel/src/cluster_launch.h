// ClusterLaunch: the launch configuration of a kernel run in thread-block clusters along x, built
// in one place for the kernels' launches (cudaLaunchKernelEx) and for the occupancy queries that
// plan them (cudaOccupancyMaxActiveClusters).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gemm::kernel {

// A launch of `ctas` CTAs of `threads` threads each, in clusters of `cluster` CTAs along x, with
// `smem` bytes of dynamic shared memory, on `stream`. `cfg.attrs` points at `attr`, so it is
// neither copied nor moved.
struct ClusterLaunch {
  ClusterLaunch(int64_t ctas, int threads, int cluster, size_t smem, cudaStream_t stream) {
    cfg.gridDim = dim3(static_cast<unsigned>(ctas), 1, 1);
    cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = static_cast<unsigned>(cluster);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;

  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr = {};
};

}  // namespace gemm::kernel
