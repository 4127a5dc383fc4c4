// Definition of PlanSm90 (included by the sm90_inst_*.cu instantiation units only): the shared
// memory limit, cluster occupancy and the tail split-K plan of one launch.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>  // the cluster-occupancy and shared-memory caches
#include <mutex>

#include "cluster_launch.h"
#include "sm90/sm90_kernel.cuh"
#include "sm90/sm90_launch.h"

namespace gemm::kernel::sm90 {

template <int BM, int BN, bool kF32Out, bool kBKN, int P, bool kSwap>
cudaError_t PlanSm90(KernelParams<P>& params, int sm_count, const SplitWorkspace& ws,
                     LaunchShape* shape) {
  auto* kernel = &Sm90GemmKernel<BM, BN, kF32Out, kBKN, P, kSwap>;
  const int smem = Sm90SmemBytes(BM, BN, params.stages);
  int device = 0;
  cudaGetDevice(&device);
  // Raise the dynamic shared-memory limit only when this launch needs more than it was raised
  // to on this device (a driver call on every launch otherwise). Raises are serialized so the
  // recorded value never exceeds the attribute's.
  static std::atomic<int> raised[64];
  if (device >= 64 || raised[device].load(std::memory_order_acquire) < smem) {
    static std::mutex raise_mu;
    std::lock_guard<std::mutex> lock(raise_mu);
    if (device >= 64 || raised[device].load(std::memory_order_relaxed) < smem) {
      cudaError_t err =
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      if (err != cudaSuccess) return err;
      if (device < 64) raised[device].store(smem, std::memory_order_release);
    }
  }
  const int cs = params.cluster_m;
  shape->kernel = reinterpret_cast<const void*>(kernel);
  shape->threads = kThreads;
  shape->smem = smem;
  shape->cluster = cs;
  shape->splits = 1;
  shape->stream_k = false;

  // Clusters that can be resident at once (cached per device and cluster size; the smem use of
  // every configuration leaves room for one CTA per SM).
  int max_clusters = sm_count / cs;
  if (cs > 1) {
    static std::atomic<int> cache[64][2];
    const int slot = cs == 2 ? 1 : 0;
    int cached = device < 64 ? cache[device][slot].load(std::memory_order_relaxed) : 0;
    if (cached == 0) {
      const ClusterLaunch launch(cs * (sm_count / cs), kThreads, cs, smem, nullptr);
      int n = 0;
      if (cudaOccupancyMaxActiveClusters(&n, kernel, &launch.cfg) == cudaSuccess && n > 0) {
        cached = n;
        if (device < 64) cache[device][slot].store(n, std::memory_order_relaxed);
      } else {
        cudaGetLastError();  // clear; fall back to the SM count
        cached = sm_count / cs;
      }
    }
    max_clusters = std::min(max_clusters, cached);
  }
  int64_t units = params.total_tiles;  // split fields: no split (FinishParams)
  // Tail split-K or stream-K over the clusters that are resident together (stream-K's shares
  // are one per cluster of the grid below). A grouped launch plans with its
  // shortest member's K, so that every piece of every tail tile gets kMinSplitKBlocks or more
  // (each unit splits its own member's K).
  if (ws.ptr != nullptr && !(params.debug_flags & kDebugNoSplit)) {
    int64_t k = params.problems[0].k;
    for (int i = 1; i < params.num_problems; ++i) {
      k = std::min<int64_t>(k, params.problems[i].k);
    }
    const SplitPlan plan =
        PlanLaunchSplit(params.total_tiles, (k + kBlockK - 1) / kBlockK, max_clusters,
                        ws.forced_splits, params.num_problems == 1);
    if (Exchanges(plan) && TotalUnits(plan) < kMaxTiles &&
        SplitWorkspaceBytes(plan, cs, BM, BN) <= static_cast<int64_t>(ws.bytes)) {
      params.dp_tiles = plan.dp_tiles;
      params.tail_tiles = plan.tail_tiles;
      params.splits = plan.splits;
      params.sk_clusters = plan.sk_clusters;
      params.sk_units = plan.sk_units;
      params.sk_k_blocks = plan.k_blocks;
      params.flags = static_cast<uint32_t*>(ws.ptr);
      params.partials =
          reinterpret_cast<float*>(static_cast<char*>(ws.ptr) + SplitFlagBytes(plan, cs));
      shape->splits = plan.splits;
      shape->stream_k = IsStreamK(plan);
      units = TotalUnits(plan);
    }
  }
  const int64_t clusters = std::max<int64_t>(1, std::min<int64_t>(units, max_clusters));
  shape->grid = static_cast<unsigned>(clusters * cs);
  return cudaSuccess;
}

// Explicit instantiations of PlanSm90 for one tile shape: both output dtypes, both B layouts,
// single-problem and grouped parameter blocks (one use per sm90_inst_*.cu).
#define GEMM_SM90_INSTANTIATE_ONE(BM, BN, F32, KN, P)                                             \
  template cudaError_t PlanSm90<BM, BN, F32, KN, P>(KernelParams<P>&, int, const SplitWorkspace&, \
                                                    LaunchShape*);
#define GEMM_SM90_INSTANTIATE_TILE(BM, BN)                            \
  GEMM_SM90_INSTANTIATE_ONE(BM, BN, false, false, 1)                  \
  GEMM_SM90_INSTANTIATE_ONE(BM, BN, false, true, 1)                   \
  GEMM_SM90_INSTANTIATE_ONE(BM, BN, true, false, 1)                   \
  GEMM_SM90_INSTANTIATE_ONE(BM, BN, true, true, 1)                    \
  GEMM_SM90_INSTANTIATE_ONE(BM, BN, false, false, kMaxGroupPerLaunch) \
  GEMM_SM90_INSTANTIATE_ONE(BM, BN, false, true, kMaxGroupPerLaunch)  \
  GEMM_SM90_INSTANTIATE_ONE(BM, BN, true, false, kMaxGroupPerLaunch)  \
  GEMM_SM90_INSTANTIATE_ONE(BM, BN, true, true, kMaxGroupPerLaunch)

// Explicit instantiations of PlanSm90 for one swap-AB tile (128 x BN): both output dtypes, both B
// layouts, single problems.
#define GEMM_SM90_INSTANTIATE_SWAP_ONE(BN, F32, KN)                               \
  template cudaError_t PlanSm90<128, BN, F32, KN, 1, true>(KernelParams<1>&, int, \
                                                           const SplitWorkspace&, LaunchShape*);
#define GEMM_SM90_INSTANTIATE_SWAP(BN)             \
  GEMM_SM90_INSTANTIATE_SWAP_ONE(BN, false, false) \
  GEMM_SM90_INSTANTIATE_SWAP_ONE(BN, true, false)  \
  GEMM_SM90_INSTANTIATE_SWAP_ONE(BN, false, true)  \
  GEMM_SM90_INSTANTIATE_SWAP_ONE(BN, true, true)

}  // namespace gemm::kernel::sm90
