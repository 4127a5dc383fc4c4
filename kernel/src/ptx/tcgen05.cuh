// Inline-PTX wrappers of the tcgen05 family (5th-generation tensor core, SM100a): TMEM
// alloc/relinquish/dealloc, the cta_group::2 UMMA, commit to (multicast) mbarriers, TMEM loads
// and the tcgen05 fences. One tiny function per instruction; device code only, sm_100a only.
// PTX ISA 9.7.16. All instructions of a kernel must use the same .cta_group: this kernel uses ::2.
#pragma once

#include <cstdint>

namespace gemm::kernel::ptx {

#if defined(__CUDA_ARCH__)

// Allocates `ncols` TMEM columns (power of two in [32, 512]) and writes the base address to the
// shared-memory word at `dst_smem`. cta_group::2: one warp of EACH peer CTA executes it.
__device__ __forceinline__ void Tcgen05Alloc2Cta(uint32_t dst_smem, uint32_t ncols) {
  asm volatile("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%0], %1;" ::"r"(dst_smem),
               "r"(ncols)
               : "memory");
}

// Gives up the right to allocate TMEM (lets the next CTA on the SM allocate once we free).
__device__ __forceinline__ void Tcgen05RelinquishAllocPermit2Cta() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;" ::: "memory");
}

// Frees an allocation; same warp as the alloc, both peer CTAs, after all TMEM use is over.
__device__ __forceinline__ void Tcgen05Dealloc2Cta(uint32_t taddr, uint32_t ncols) {
  asm volatile("tcgen05.dealloc.cta_group::2.sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(ncols)
               : "memory");
}

// D[tmem] (+)= A[smem desc] * B[smem desc] over both CTAs of the pair (cta_group::2, M = 256).
// `accumulate` false zero-initializes D (the enable-input-d predicate; 0 on a tile's first K step).
__device__ __forceinline__ void Tcgen05MmaBf16Cta2(uint32_t d_tmem, uint64_t a_desc,
                                                   uint64_t b_desc, uint32_t idesc,
                                                   uint32_t accumulate) {
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.b32 p, %4, 0;\n\t"
      "tcgen05.mma.cta_group::2.kind::f16 [%0], %1, %2, %3, p;\n\t}\n" ::"r"(d_tmem),
      "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate)
      : "memory");
}

// Arrives once on the mbarrier at shared offset `bar` of every CTA in `cta_mask` when all prior
// tcgen05 async operations of this thread complete (UTCBAR multicast form).
__device__ __forceinline__ void Tcgen05CommitMulticast2Cta(uint32_t bar, uint16_t cta_mask) {
  asm volatile(
      "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64"
      " [%0], %1;" ::"r"(bar),
      "h"(cta_mask)
      : "memory");
}

// Orders prior tcgen05 ops before a following thread sync (barrier arrive, cluster barrier).
__device__ __forceinline__ void Tcgen05FenceBeforeThreadSync() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}

// Orders following tcgen05 ops after a preceding thread sync (barrier wait, cluster barrier).
__device__ __forceinline__ void Tcgen05FenceAfterThreadSync() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}

// Waits until this thread's tcgen05.ld results are in registers.
__device__ __forceinline__ void Tcgen05WaitLd() {
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
}

// Loads 32 consecutive 32-bit columns of the warp's 32 TMEM lanes (shape 32x32b, x32): thread i
// of the warp receives lane (taddr lane + i), columns taddr.col .. +31.
__device__ __forceinline__ void Tcgen05Ld32x32bX32(uint32_t taddr, uint32_t (&v)[32]) {
  asm volatile(
      "tcgen05.ld.sync.aligned.32x32b.x32.b32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, [%32];"
      : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3]), "=r"(v[4]), "=r"(v[5]), "=r"(v[6]),
        "=r"(v[7]), "=r"(v[8]), "=r"(v[9]), "=r"(v[10]), "=r"(v[11]), "=r"(v[12]), "=r"(v[13]),
        "=r"(v[14]), "=r"(v[15]), "=r"(v[16]), "=r"(v[17]), "=r"(v[18]), "=r"(v[19]), "=r"(v[20]),
        "=r"(v[21]), "=r"(v[22]), "=r"(v[23]), "=r"(v[24]), "=r"(v[25]), "=r"(v[26]), "=r"(v[27]),
        "=r"(v[28]), "=r"(v[29]), "=r"(v[30]), "=r"(v[31])
      : "r"(taddr)
      : "memory");
}

#endif  // __CUDA_ARCH__

}  // namespace gemm::kernel::ptx
