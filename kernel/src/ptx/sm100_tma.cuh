// Inline-PTX wrappers for the SM100 kernel's TMA traffic: 2-CTA loads that signal the leader
// CTA's mbarrier, plain loads, stores with bulk-group completion, tensor-map prefetch. Device
// code only. Kept apart from the SM90 kernel's ptx/tma.cuh (which targets sm_90a forms).
#pragma once

#include <cstdint>

namespace gemm::kernel::ptx {

#if defined(__CUDA_ARCH__)

// Brings a tensor map (param, const or global space, generic address) into the TMA cache.
__device__ __forceinline__ void PrefetchTensorMap(const void* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// 3-D tiled load into this CTA's shared memory at `dst`; completion bytes go to the mbarrier
// `cluster_bar`, which may live in the peer CTA (cta_group::2: the leader's "full" barrier).
__device__ __forceinline__ void TmaLoad3d2Cta(uint32_t dst, const void* map, int32_t c0, int32_t c1,
                                              int32_t c2, uint32_t cluster_bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.cta_group::2.shared::cluster.global.tile.mbarrier::complete_tx::"
      "bytes [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(cluster_bar)
      : "memory");
}

// 3-D tiled load into this CTA's shared memory, completing on a local mbarrier.
__device__ __forceinline__ void TmaLoad3d(uint32_t dst, const void* map, int32_t c0, int32_t c1,
                                          int32_t c2, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

// 3-D tiled store from shared memory; completion tracked by bulk groups. Out-of-range rows and
// columns of the box are clipped by the hardware.
__device__ __forceinline__ void TmaStore3d(const void* map, uint32_t src, int32_t c0, int32_t c1,
                                           int32_t c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

__device__ __forceinline__ void BulkCommitGroup() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until at most N bulk groups still READ shared memory (the buffer may be rewritten).
template <int N>
__device__ __forceinline__ void BulkWaitGroupRead() {
  static_assert(N >= 0 && N <= 7, "wait_group immediate");
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Waits until at most N bulk groups are incomplete (writes to global memory done).
template <int N>
__device__ __forceinline__ void BulkWaitGroup() {
  static_assert(N >= 0 && N <= 7, "wait_group immediate");
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

#endif  // __CUDA_ARCH__

}  // namespace gemm::kernel::ptx
