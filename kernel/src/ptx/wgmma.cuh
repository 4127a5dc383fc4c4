// WGMMA (SM90a warpgroup MMA) wrappers: fences, commit/wait, shared-memory matrix descriptors
// and (from the generated wgmma_bf16.cuh) m64nNk16 BF16 x BF16 -> FP32 with both operands in
// shared memory.
#pragma once

#include <cstdint>

#include "ptx/wgmma_bf16.cuh"

namespace gemm::kernel::ptx {

// Orders register accesses of the warpgroup before the following wgmma.mma_async.
__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// Waits until at most N committed wgmma groups are pending.
template <int N>
__device__ __forceinline__ void WgmmaWait() {
  static_assert(N >= 0 && N <= 7, "wgmma wait_group count is a small immediate");
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Shared-memory matrix descriptor with 128-byte swizzle (layout type 1 in bits [62,64)).
// `lbo`/`sbo` are the leading/stride byte offsets of the PTX ISA's canonical layouts:
//   K-major:  SBO = byte distance between 8-row groups (1024 for 128-byte rows); LBO unused.
//   MN-major: LBO = byte distance between 64-element MN chunks, SBO = between 8-row K groups.
// NOTE: buffers are 1024-byte aligned so the base-offset field stays 0.
__host__ __device__ __forceinline__ constexpr uint64_t MakeSmemDescSw128(uint32_t smem_addr,
                                                                         uint32_t lbo,
                                                                         uint32_t sbo) {
  return (static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4)) |
         (static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32) | (uint64_t{1} << 62);
}

}  // namespace gemm::kernel::ptx
