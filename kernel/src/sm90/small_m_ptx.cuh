// Inline-PTX wrappers used by the small-M kernel: cp.async (16-byte, zero-filling), ldmatrix and
// mma.sync m16n8k16 BF16 -> FP32. Each wrapper is one instruction; bodies exist for sm_80+.
#pragma once

#include <cstdint>

namespace gemm::kernel::sm90::small_m {

// Shared-memory address of `p` in the .shared window.
__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Copies `src_bytes` (0..16) from `src` to the 16 bytes at `dst` and zero-fills the rest. With
// src_bytes == 0 nothing is read. NOTE: .cg bypasses L1 (B is streamed once); the 256-byte L2
// prefetch pulls in the next stage of the same weight rows.
__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src, uint32_t src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes)
               : "memory");
#endif
}

// Closes the current group of cp.async operations.
__device__ __forceinline__ void CpAsyncCommit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most `kPending` committed cp.async groups are still in flight.
template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  static_assert(kPending >= 0 && kPending < 16, "cp.async.wait_group immediate out of range");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Four 8x8 b16 matrices from shared memory; lane i supplies the row address of matrix i / 8.
__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}

// As LdMatrixX4, each matrix transposed.
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t (&r)[4], uint32_t addr) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
#endif
}

// d += a (16x16 row-major BF16) * b (16x8 column-major BF16), FP32 accumulate.
__device__ __forceinline__ void MmaBf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// Waits for the grids this one depends on (programmatic dependent launch); no-op otherwise.
__device__ __forceinline__ void GridDependencyWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Lets the grid launched after this one with programmatic dependent launch start now; its
// griddepcontrol.wait still waits for this whole grid to finish and its writes to be visible.
__device__ __forceinline__ void LaunchDependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

}  // namespace gemm::kernel::sm90::small_m
