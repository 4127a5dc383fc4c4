// mbarrier wrappers (SM90+): init, arrive (local, remote-in-cluster, with expected bytes) and
// parity wait (bounded in the GEMM_MBARRIER_TIMEOUT_NS build). Addresses are 32-bit shared-memory
// addresses (cvta to shared).
#pragma once

#include <cstdint>

#include "ptx/bounded_wait.cuh"

namespace gemm::kernel::ptx {

__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void MbarInit(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Makes barrier initialisation visible to the cluster (and to the async proxy).
__device__ __forceinline__ void FenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Arrives once and adds `bytes` to the transaction count the current phase waits for.
__device__ __forceinline__ void MbarArriveExpectTx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void MbarArrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Arrives on the barrier at the same shared-memory offset in cluster CTA `cta_rank`.
// NOTE: default (.release.cta) semantics on purpose: ".release.cluster" compiles to a
// MEMBAR.ALL.GPU before every arrive and cost 30% of the kernel's throughput. The arrive only
// says "my wgmma reads of this slot retired" (wgmma.wait_group already ordered them); there are
// no generic-proxy writes to publish to the peer.
__device__ __forceinline__ void MbarArriveCluster(uint32_t bar, uint32_t cta_rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(bar),
      "r"(cta_rank)
      : "memory");
}

// Blocks until the phase with parity `parity` has completed. `site` and `tile` name the wait in
// the bounded-wait build's timeout record (ptx/bounded_wait.cuh); otherwise unused.
__device__ __forceinline__ void MbarWait(uint32_t bar, uint32_t parity,
                                         WaitSite site = WaitSite::kUnnamed,
                                         uint32_t tile = 0xffffffffu) {
  MbarWaitParity<false>(bar, parity, site, tile);
}

}  // namespace gemm::kernel::ptx
