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
// (cluster-scope acquire: arrivals may come from the peer CTA).
__device__ __forceinline__ void MbarrierWait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n\t"
      "WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra WAIT_%=;\n\t}" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// Arrive + expect `bytes` of async transactions on a barrier in any CTA of the cluster
// (`cluster_bar` from MapaShared).
__device__ __forceinline__ void MbarrierArriveExpectTxCluster(uint32_t cluster_bar,
                                                              uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;" ::"r"(
                   cluster_bar),
               "r"(bytes)
               : "memory");
}

// Arrive + expect `bytes` on a local barrier.
__device__ __forceinline__ void MbarrierArriveExpectTx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(bar),
               "r"(bytes)
               : "memory");
}

// Plain arrive on a barrier in any CTA of the cluster.
__device__ __forceinline__ void MbarrierArriveCluster(uint32_t cluster_bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_bar)
               : "memory");
}

// Makes this thread's generic-proxy shared-memory writes visible to the async proxy (TMA store).
__device__ __forceinline__ void FenceProxyAsyncShared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

#endif  // __CUDA_ARCH__

}  // namespace gemm::kernel::ptx
