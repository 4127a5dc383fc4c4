// Thread-block-cluster, warpgroup-register, named-barrier and flag wrappers (SM90+).
#pragma once

#include <cstdint>

namespace gemm::kernel::ptx {

__device__ __forceinline__ uint32_t ClusterCtaRank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// Full cluster barrier (every thread of every CTA of the cluster), release/acquire.
__device__ __forceinline__ void ClusterSync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

// Address of the same shared offset in CTA `rank` of the cluster (shared::cluster window).
__device__ __forceinline__ uint32_t MapaShared(uint32_t smem_addr, uint32_t rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(smem_addr), "r"(rank));
  return out;
}

// Loads four floats (16-byte aligned) from a shared::cluster address (from MapaShared).
__device__ __forceinline__ float4 LdSharedClusterF32x4(uint32_t cluster_addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(cluster_addr)
               : "memory");
  return v;
}

// Named barrier `id` over `count` threads (multiples of 32).
__device__ __forceinline__ void NamedBarrierSync(uint32_t id, uint32_t count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

// GPU-scope release store / acquire load of a flag in global memory (split-K handshakes).
__device__ __forceinline__ void StoreReleaseGpu(uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t LoadAcquireGpu(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// setmaxnreg: the warpgroup gives registers back / takes more. NOTE: needs a register cap at
// kernel entry (__launch_bounds__(threads, 1)) and warpgroup-uniform control flow.
template <int N>
__device__ __forceinline__ void WarpgroupRegDealloc() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24,256]");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void WarpgroupRegAlloc() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "setmaxnreg takes a multiple of 8 in [24,256]");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

// stmatrix: four 8x8 b16 matrices; lane i gives the row address for matrix i/8, row i%8, and
// register j holds this lane's pair of matrix j.
__device__ __forceinline__ void StMatrixX4(uint32_t smem, uint32_t r0, uint32_t r1, uint32_t r2,
                                           uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// stmatrix .trans: as StMatrixX4, but each matrix is stored transposed (the row address of lane
// i receives column i%8 of matrix i/8).
__device__ __forceinline__ void StMatrixX4Trans(uint32_t smem, uint32_t r0, uint32_t r1,
                                                uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

}  // namespace gemm::kernel::ptx
