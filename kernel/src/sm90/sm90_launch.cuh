// Definition of LaunchSm90 (included by the sm90_inst_*.cu instantiation units only).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "sm90/sm90_kernel.cuh"
#include "sm90/sm90_launch.h"

namespace gemm::kernel::sm90 {

template <int BM, int BN, bool kF32Out, bool kBKN, int P>
cudaError_t LaunchSm90(const KernelParams<P>& params, int sm_count, cudaStream_t stream,
                       int* grid_out) {
  auto* kernel = &Sm90GemmKernel<BM, BN, kF32Out, kBKN, P>;
  const int smem = SmemBytes(BM, BN, params.stages);
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  const int cs = params.cluster_m;

  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cs;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;

  // Clusters that can be resident at once (cached per device and cluster size; the smem use of
  // every configuration leaves room for one CTA per SM).
  int max_clusters = sm_count / cs;
  if (cs > 1) {
    static std::atomic<int> cache[64][2];
    int device = 0;
    cudaGetDevice(&device);
    const int slot = cs == 2 ? 1 : 0;
    int cached = device < 64 ? cache[device][slot].load(std::memory_order_relaxed) : 0;
    if (cached == 0) {
      cfg.gridDim = dim3(cs * (sm_count / cs), 1, 1);
      int n = 0;
      if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) == cudaSuccess && n > 0) {
        cached = n;
        if (device < 64) cache[device][slot].store(n, std::memory_order_relaxed);
      } else {
        cudaGetLastError();  // clear; fall back to the SM count
        cached = sm_count / cs;
      }
    }
    max_clusters = std::min(max_clusters, cached);
  }
  const int64_t clusters =
      std::max<int64_t>(1, std::min<int64_t>(params.total_tiles, max_clusters));
  cfg.gridDim = dim3(static_cast<unsigned>(clusters * cs), 1, 1);
  if (grid_out != nullptr) *grid_out = static_cast<int>(clusters * cs);
  return cudaLaunchKernelEx(&cfg, kernel, params);
}

}  // namespace gemm::kernel::sm90
