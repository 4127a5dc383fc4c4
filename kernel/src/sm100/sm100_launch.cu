// Host launch of the SM100 kernel variants (the only translation unit with device code of the
// SM100 kernel; compiled for sm_100a only). Explicitly instantiates the shipped variants:
// wide 256x256 tiles and their 2-M-wave 512x256 form (B as [N,K] or [K,N]) and the small-M
// swap-AB 256x128 tiles, each with BF16 or FP32 output, plus the split-K reduction. Static or
// Cluster Launch Control scheduling is a kernel parameter (KernelParams::use_clc). Knows nothing of
// absl, gRPC or protobuf.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "cluster_launch.h"
#include "sm100/sm100_kernel.cuh"
#include "sm100/sm100_params.h"

namespace gemm::kernel::sm100 {
namespace {

// d = alpha * sum(partials) + beta * c, elementwise (grid-stride).
template <typename OutT>
__global__ void SplitReduceKernel(SplitReduceArgs a) {
  const int64_t total = static_cast<int64_t>(a.m) * a.n;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / a.n, col = i % a.n;
    float acc = 0.0f;
    for (int32_t s = 0; s < a.splits; ++s) acc += a.partials[s * a.slice_elems + r * a.ldw + col];
    float v = a.alpha * acc;
    const OutT* c = static_cast<const OutT*>(a.c);
    if (c != nullptr && a.beta != 0.0f) v += a.beta * static_cast<float>(c[r * a.ldc + col]);
    static_cast<OutT*>(a.d)[r * a.ldd + col] = static_cast<OutT>(v);
  }
}

}  // namespace

int LaunchSplitReduce(const SplitReduceArgs& args, CUstream_st* stream) {
  const int64_t total = static_cast<int64_t>(args.m) * args.n;
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((total + threads - 1) / threads, 4096));
  if (args.out_f32) {
    SplitReduceKernel<float><<<blocks, threads, 0, stream>>>(args);
  } else {
    SplitReduceKernel<__nv_bfloat16><<<blocks, threads, 0, stream>>>(args);
  }
  return static_cast<int>(cudaGetLastError());
}

uint32_t SmemBytes(const VariantKey& key) {
  return static_cast<uint32_t>(
      WithVariant(key, []<class Cfg, bool kX, bool kY>(Variant<Cfg, kX, kY>) -> int {
        return static_cast<int>(Cfg::kSmemBytes);
      }));
}

int LaunchVariant(const VariantKey& key, const KernelParams& params, int num_clusters,
                  CUstream_st* stream) {
  return WithVariant(key, [&]<class Cfg, bool kXMn, bool kYMn>(Variant<Cfg, kXMn, kYMn>) -> int {
    auto* kernel = &GemmKernel<Cfg, kXMn, kYMn>;
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(Cfg::kSmemBytes));
    if (err != cudaSuccess) return static_cast<int>(err);
    const ClusterLaunch launch(2 * num_clusters, kNumThreads, 2, Cfg::kSmemBytes, stream);
    return static_cast<int>(cudaLaunchKernelEx(&launch.cfg, kernel, params));
  });
}

int MaxActiveClusters(const VariantKey& key) {
  return WithVariant(key, [&]<class Cfg, bool kXMn, bool kYMn>(Variant<Cfg, kXMn, kYMn>) -> int {
    auto* kernel = &GemmKernel<Cfg, kXMn, kYMn>;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(Cfg::kSmemBytes)) != cudaSuccess) {
      return 0;
    }
    const ClusterLaunch launch(2, kNumThreads, 2, Cfg::kSmemBytes, nullptr);
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.cfg) != cudaSuccess) return 0;
    return clusters;
  });
}

}  // namespace gemm::kernel::sm100
