// tcgen05 descriptors of the SM100 kernel: the 32-bit instruction descriptor of
// `tcgen05.mma.kind::f16` and the 64-bit shared-memory matrix descriptor for 128B-swizzled
// operands (K-major and MN-major), plus the K-slice advance inside a stage. Pure functions,
// unit-tested on the CPU (tests/unit/sm100_desc_test.cc) against the PTX ISA tables and the
// published descriptor constants (docs/sm100.md names the reference documents).
#pragma once

#include <cstdint>

#include "sm100/sm100_hd.h"

namespace gemm::kernel::sm100 {

// Major-ness of an MMA operand in shared memory. K-major is the PTX "no transpose" default.
enum class Major : uint32_t { kK = 0, kMN = 1 };

// PTX ISA 9.7.16.4.2 (instruction descriptor, .kind::f16): field values.
inline constexpr uint32_t kDTypeF32 = 1;    // bits 4-5, D type
inline constexpr uint32_t kABTypeBF16 = 1;  // bits 7-9 / 10-12; F16 = 0, BF16 = 1 (NOT 3)

// Instruction descriptor for D(f32) += A(bf16) * B(bf16) of shape m x n (m = full M of the
// instruction: 256 for cta_group::2). Bits: 4-5 dtype, 7-9 atype, 10-12 btype, 15 transpose A,
// 16 transpose B, 17-22 N>>3, 23 reserved, 24-28 M>>4.
SM100_HD constexpr uint32_t MakeInstrDesc(uint32_t m, uint32_t n, Major a_major, Major b_major) {
  return (kDTypeF32 << 4) | (kABTypeBF16 << 7) | (kABTypeBF16 << 10) |
         (static_cast<uint32_t>(a_major) << 15) | (static_cast<uint32_t>(b_major) << 16) |
         ((n >> 3) << 17) | ((m >> 4) << 24);
}

// PTX ISA tcgen05 shared memory descriptor fields.
inline constexpr uint64_t kSmemDescVersion = 1;      // bits 46-47: fixed 0b001 on SM100
inline constexpr uint64_t kLayoutSwizzle128B = 2;    // bits 61-63: 2 = 128-byte swizzling
inline constexpr uint32_t kSwizzleAtomBytes = 1024;  // 8 rows x 128 B: one swizzle pattern

// matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4 (PTX ISA).
SM100_HD constexpr uint64_t DescEncode(uint32_t x) { return (x & 0x3FFFFu) >> 4; }

// Shared memory descriptor of a SWIZZLE_128B operand starting at shared address `smem_addr`
// (1024-byte aligned pattern, so base offset 0): start address bits 0-13, leading-dimension byte
// offset bits 16-29, stride-dimension byte offset bits 32-45, version bits 46-47, base offset
// 49-51 (0), LBO mode bit 52 (0), layout bits 61-63.
SM100_HD constexpr uint64_t MakeSmemDesc(uint32_t smem_addr, uint32_t lbo_bytes,
                                         uint32_t sbo_bytes) {
  return DescEncode(smem_addr) | (DescEncode(lbo_bytes) << 16) | (DescEncode(sbo_bytes) << 32) |
         (kSmemDescVersion << 46) | (kLayoutSwizzle128B << 61);
}

// K-major, 128B swizzle, canonical layout ((8,m),(T,2k)):((8T,SBO),(1,T)): rows of 128 bytes
// (64 bf16 of K), 8-row groups 1024 bytes apart (SBO); LBO is unused and encoded as 1, as in the
// PTX ISA examples ("1 (assumed)") and the pyptx 1-SM GEMM walkthrough's constant
// 0x4000404000010000.
SM100_HD constexpr uint64_t MakeKMajorDesc(uint32_t smem_addr) {
  return MakeSmemDesc(smem_addr, 16, kSwizzleAtomBytes);
}

// MN-major, 128B swizzle, canonical layout ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)): each K row is
// 128 bytes (64 bf16 of M/N), 8-row K groups 1024 bytes apart (SBO), 64-element M/N chunks
// `mn_chunk_stride` bytes apart (LBO).
SM100_HD constexpr uint64_t MakeMnMajorDesc(uint32_t smem_addr, uint32_t mn_chunk_stride) {
  return MakeSmemDesc(smem_addr, mn_chunk_stride, kSwizzleAtomBytes);
}

// Bytes from one UMMA K-slice (k elements of bf16) to the next inside a stage: K-major walks
// along the 128-byte row (2 bytes per element; the hardware applies the swizzle to the absolute
// address, as in tcgen05 for dummies' "1st/2nd address"), MN-major walks whole 128-byte K rows.
SM100_HD constexpr uint32_t KSliceAdvanceBytes(Major major, uint32_t k_elems) {
  return major == Major::kK ? k_elems * 2u : k_elems * 128u;
}

// `desc` moved forward by `bytes` (a multiple of 16): only the start-address field changes, as
// long as the address stays below 256 KiB (always true for shared memory).
SM100_HD constexpr uint64_t AdvanceDesc(uint64_t desc, uint32_t bytes) {
  return desc + (bytes >> 4);
}

// M-waves (the Blackwell GEMM Optimization Manual's final level, item 3). Start of wave `wave`'s
// rows inside a K-major SWIZZLE_128B X stage: rows are 128 bytes and 8-row swizzle atoms are
// contiguous (SBO = 1024), so wave w's 128 rows start w * 128 * 128 = w * 16 KiB in (a multiple
// of the 1024-byte atom: the swizzle phase and the descriptor's base offset stay 0). DeepGEMM's
// make_umma_desc(smem_a, w * LAYOUT_AD_M, k * UMMA_K) does the same.
SM100_HD constexpr uint32_t WaveXOffsetBytes(uint32_t wave, uint32_t wave_rows) {
  return wave * wave_rows * 128u;
}

// The UMMA's enable-input-d (scale-c) flag: accumulate except on the tile's first K slice.
// The manual's "Critical Insight: Accumulation Flag for M-Waves": each M-wave writes separate TMEM
// columns, so the flag does NOT depend on the wave: every wave clears on its first K step
// (`(kb > 0 || k > 0 || w > 0)` would leave wave 1 adding onto stale TMEM).
SM100_HD constexpr uint32_t AccumulateFlag(int32_t k_block, int32_t k_slice) {
  return (k_block > 0 || k_slice > 0) ? 1u : 0u;
}

}  // namespace gemm::kernel::sm100
