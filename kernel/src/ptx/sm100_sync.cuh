// Inline-PTX wrappers for the SM100 kernel's synchronization: mbarrier (local and remote in the
// 2-CTA cluster, with the cluster-scope semantics the 2-SM pipeline needs), mapa and the proxy
// fences. Device code only. The wrappers both kernels use unchanged (SmemAddr, ClusterCtaRank,
// ClusterSync, MapaShared) come from ptx/mbarrier.cuh and ptx/cluster.cuh.
#pragma once

#include <cstdint>

#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"

namespace gemm::kernel::ptx {

#if defined(__CUDA_ARCH__)

__device__ __forceinline__ void MbarrierInit(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Makes mbarrier inits visible to the async proxy and to the peer CTA.
__device__ __forceinline__ void FenceMbarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Spins until the phase of parity `parity` of the local mbarrier `bar` has completed
// (cluster-scope acquire: arrivals may come from the peer CTA). `site` and `tile` name the wait in
// the bounded-wait build's timeout record (ptx/bounded_wait.cuh); otherwise unused.
__device__ __forceinline__ void MbarrierWait(uint32_t bar, uint32_t parity,
                                             WaitSite site = WaitSite::kUnnamed,
                                             uint32_t tile = 0xffffffffu) {
  MbarWaitParity<true>(bar, parity, site, tile);
}

// Arrive + expect `bytes` of async transactions on a barrier in any CTA of the cluster
// (`cluster_bar` from MapaShared).
// NOTE: .release.cta, not .release.cluster: the arrive publishes no generic-proxy writes (the
// bytes it announces arrive by TMA and complete_tx), and .release.cluster compiles to a GPU-wide
// fence (MEMBAR) before every arrive, once per pipeline stage.
__device__ __forceinline__ void MbarrierArriveExpectTxCluster(uint32_t cluster_bar,
                                                              uint32_t bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.release.cta.shared::cluster.b64 _, [%0], %1;" ::"r"(cluster_bar),
      "r"(bytes)
      : "memory");
}

// Arrive + expect `bytes` on a local barrier.
__device__ __forceinline__ void MbarrierArriveExpectTx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
               "r"(bytes)
               : "memory");
}

// Arrive on a barrier in any CTA of the cluster with CTA-scope release: for hand-offs ordered by
// other means (the TMEM accumulator: tcgen05.wait::ld and fence::before_thread_sync), where
// cluster scope would only add a GPU-wide fence per tile.
__device__ __forceinline__ void MbarrierArriveRemote(uint32_t cluster_bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0];" ::"r"(cluster_bar)
               : "memory");
}

// Arrive on a barrier in any CTA of the cluster, releasing this thread's shared-memory reads to
// the peer CTA (the CLC response slots, rewritten by the leader's next try_cancel).
__device__ __forceinline__ void MbarrierArriveCluster(uint32_t cluster_bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_bar)
               : "memory");
}

// Acquires the tensor map at `map` (global memory, written by a host copy) for the tensormap
// proxy: required before the first TMA use of a map that is not a kernel parameter.
__device__ __forceinline__ void FenceTensorMapAcquire(const void* map) {
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(map) : "memory");
}

// Makes this thread's generic-proxy shared-memory writes visible to the async proxy (TMA store).
__device__ __forceinline__ void FenceProxyAsyncShared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

#endif  // __CUDA_ARCH__

}  // namespace gemm::kernel::ptx
