// TMA (cp.async.bulk.tensor) wrappers: 3D tiled loads completing on an mbarrier (optionally
// multicast to the CTAs of a cluster), 3D tiled stores from shared memory with bulk-group
// completion, and tensor-map prefetch. Coordinates are element indices, innermost first.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace gemm::kernel::ptx {

__device__ __forceinline__ void PrefetchTensorMap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

__device__ __forceinline__ void TmaLoad3d(const CUtensorMap* map, uint32_t smem_dst, uint32_t bar,
                                          int32_t c0, int32_t c1, int32_t c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// Same tile written at the same offset into every CTA of `cta_mask` (and signalled on the
// barrier at the same offset in each).
__device__ __forceinline__ void TmaLoad3dMulticast(const CUtensorMap* map, uint32_t smem_dst,
                                                   uint32_t bar, uint16_t cta_mask, int32_t c0,
                                                   int32_t c1, int32_t c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%4, %5, %6}], [%2], %3;" ::"r"(smem_dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// Stores a tile; out-of-bounds parts of the box are clipped by the hardware.
__device__ __forceinline__ void TmaStore3d(const CUtensorMap* map, uint32_t smem_src, int32_t c0,
                                           int32_t c1, int32_t c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(smem_src), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

__device__ __forceinline__ void BulkCommitGroup() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until at most N committed bulk groups still read their shared-memory source.
template <int N>
__device__ __forceinline__ void BulkWaitGroupRead() {
  static_assert(N >= 0 && N < 8, "bulk wait_group count is a small immediate");
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Waits until at most N committed bulk groups are incomplete.
template <int N>
__device__ __forceinline__ void BulkWaitGroup() {
  static_assert(N >= 0 && N < 8, "bulk wait_group count is a small immediate");
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

// Orders this thread's generic-proxy shared-memory writes before later async-proxy reads
// (TMA store, WGMMA).
__device__ __forceinline__ void FenceProxyAsyncShared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

}  // namespace gemm::kernel::ptx
