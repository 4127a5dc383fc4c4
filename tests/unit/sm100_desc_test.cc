// Tests of the SM100 tcgen05 descriptors (kernel/src/sm100/sm100_desc.h) against the PTX ISA
// tables (9.7.16.4.2 instruction descriptor; tcgen05 shared memory descriptor; canonical layouts)
// and the reference documents of docs/sm100.md (the Blackwell GEMM Optimization Manual's appendix
// "Descriptor Bit Layouts", the pyptx 1-SM GEMM walkthrough's MMA_DESC_B128).
#include "sm100/sm100_desc.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace gemm::kernel::sm100 {
namespace {

uint32_t Bits(uint64_t v, int lo, int hi_exclusive) {
  return static_cast<uint32_t>((v >> lo) & ((uint64_t{1} << (hi_exclusive - lo)) - 1));
}

TEST(Sm100InstrDesc, FieldsMatchPtxIsaTable) {
  const uint32_t d = MakeInstrDesc(256, 256, Major::kK, Major::kK);
  EXPECT_EQ(Bits(d, 0, 4), 0u);           // dense, no saturate
  EXPECT_EQ(Bits(d, 4, 6), 1u);           // dtype F32 = 1
  EXPECT_EQ(Bits(d, 6, 7), 0u);           // reserved
  EXPECT_EQ(Bits(d, 7, 10), 1u);          // atype BF16 = 1 (not 3)
  EXPECT_EQ(Bits(d, 10, 13), 1u);         // btype BF16 = 1
  EXPECT_EQ(Bits(d, 13, 15), 0u);         // no negate
  EXPECT_EQ(Bits(d, 15, 16), 0u);         // A K-major (no transpose)
  EXPECT_EQ(Bits(d, 16, 17), 0u);         // B K-major
  EXPECT_EQ(Bits(d, 17, 23), 256u >> 3);  // N >> 3 at bits 17-22
  EXPECT_EQ(Bits(d, 23, 24), 0u);         // reserved
  EXPECT_EQ(Bits(d, 24, 29), 256u >> 4);  // M >> 4 at bits 24-28
  EXPECT_EQ(Bits(d, 29, 32), 0u);
}

TEST(Sm100InstrDesc, KnownValues) {
  // (1<<4) | (1<<7) | (1<<10) | (32<<17) | (16<<24), written out by hand.
  EXPECT_EQ(MakeInstrDesc(256, 256, Major::kK, Major::kK), 0x10400490u);
  // N = 128 (swap-AB kernel): 16 << 17.
  EXPECT_EQ(MakeInstrDesc(256, 128, Major::kK, Major::kK), 0x10200490u);
  // tcgen05 for dummies' 1-SM example M=128, N=256: (128>>4)<<24 | (256>>3)<<17 | formats.
  EXPECT_EQ(MakeInstrDesc(128, 256, Major::kK, Major::kK), 0x08400490u);
  // Transpose bits: A at 15, B at 16 (MN-major operands).
  EXPECT_EQ(MakeInstrDesc(256, 256, Major::kK, Major::kMN), 0x10410490u);
  EXPECT_EQ(MakeInstrDesc(256, 128, Major::kMN, Major::kK), 0x10208490u);
}

TEST(Sm100InstrDesc, FitsIn32Bits) {
  // The instruction descriptor operand is a 32-bit register (a 64-bit one does not assemble).
  static_assert(sizeof(MakeInstrDesc(256, 256, Major::kK, Major::kK)) == 4);
}

TEST(Sm100SmemDesc, FieldsMatchPtxIsaTable) {
  const uint32_t addr = 0x12400;  // 1024-aligned shared address
  const uint64_t d = MakeSmemDesc(addr, 8192, 1024);
  EXPECT_EQ(Bits(d, 0, 14), addr >> 4);  // start address >> 4
  EXPECT_EQ(Bits(d, 14, 16), 0u);
  EXPECT_EQ(Bits(d, 16, 30), 8192u >> 4);  // LBO >> 4
  EXPECT_EQ(Bits(d, 30, 32), 0u);
  EXPECT_EQ(Bits(d, 32, 46), 1024u >> 4);  // SBO >> 4
  EXPECT_EQ(Bits(d, 46, 48), 1u);          // version = 1 (SM100)
  EXPECT_EQ(Bits(d, 48, 49), 0u);
  EXPECT_EQ(Bits(d, 49, 52), 0u);  // base offset 0 (1024-aligned pattern)
  EXPECT_EQ(Bits(d, 52, 53), 0u);  // LBO relative mode
  EXPECT_EQ(Bits(d, 53, 61), 0u);
  EXPECT_EQ(Bits(d, 61, 64), 2u);  // layout type 2 = SWIZZLE_128B
}

TEST(Sm100SmemDesc, MatchesPyptxWalkthroughConstant) {
  // The pyptx walkthrough's MMA_DESC_B128 = 0x4000404000010000 is the K-major SWIZZLE_128B
  // descriptor of address 0 (SBO 1024, LBO encoded 1, version 1, layout 2); addresses are OR-ed
  // into bits 0-13.
  EXPECT_EQ(MakeKMajorDesc(0), 0x4000404000010000ull);
  EXPECT_EQ(MakeKMajorDesc(0x8000), 0x4000404000010000ull | (0x8000 >> 4));
}

TEST(Sm100SmemDesc, MatchesManualBitLayout) {
  // The manual's appendix: version 1 in bits [46,48), SWIZZLE_128B = 2 in bits [61,64), SBO 1024.
  const uint64_t d = MakeKMajorDesc(0x400);
  EXPECT_EQ((d >> 46) & 3, 1u);
  EXPECT_EQ(d >> 61, 2u);
  EXPECT_EQ((d >> 32) & 0x3FFF, 1024u >> 4);
}

TEST(Sm100SmemDesc, MnMajorCanonicalLayout) {
  // PTX canonical MN-major 128B layout ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)): LBO = distance of
  // 64-element MN chunks (one 64 x 64 TMA box = 8 KiB here), SBO = 8 K rows x 128 B.
  const uint64_t d = MakeMnMajorDesc(0x2000, 64 * 128);
  EXPECT_EQ(Bits(d, 16, 30), 8192u >> 4);
  EXPECT_EQ(Bits(d, 32, 46), 1024u >> 4);
  EXPECT_EQ(Bits(d, 61, 64), 2u);
}

TEST(Sm100SmemDesc, EncodeMasksTo18Bits) {
  // matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4.
  EXPECT_EQ(DescEncode(0x3FFF0), 0x3FFFu);
  EXPECT_EQ(DescEncode(0x40010), 1u);
}

TEST(Sm100KSlice, AdvancePerKSlice) {
  // The pyptx walkthrough: "+ kk * 2" on the descriptor per 16-wide K slice (32 bytes >> 4) for
  // K-major.
  EXPECT_EQ(KSliceAdvanceBytes(Major::kK, 16), 32u);
  const uint64_t d0 = MakeKMajorDesc(0x4000);
  for (uint32_t kk = 0; kk < 4; ++kk) {
    EXPECT_EQ(AdvanceDesc(d0, kk * KSliceAdvanceBytes(Major::kK, 16)), d0 + kk * 2);
    // Only the start address moves; every other field stays.
    EXPECT_EQ(AdvanceDesc(d0, kk * 32) >> 14, d0 >> 14);
  }
  // MN-major: 16 K rows of 128 bytes = 2048 bytes = two 8-row groups (2 x SBO).
  EXPECT_EQ(KSliceAdvanceBytes(Major::kMN, 16), 2048u);
  const uint64_t m0 = MakeMnMajorDesc(0x4000, 8192);
  EXPECT_EQ(AdvanceDesc(m0, 3 * 2048), MakeMnMajorDesc(0x4000 + 3 * 2048, 8192));
}

TEST(Sm100KSlice, AdvanceEqualsDescriptorOfAdvancedAddress) {
  // For every stage address in the SM100 shared memory range, advancing equals re-encoding.
  for (uint32_t addr = 0; addr < 200 * 1024; addr += 1024) {
    for (uint32_t k = 0; k < 4; ++k) {
      EXPECT_EQ(AdvanceDesc(MakeKMajorDesc(addr), k * 32), MakeKMajorDesc(addr + k * 32));
    }
  }
}

// The manual's final level: wave w of a 256-row K-major X stage starts 128 rows x 128 bytes in;
// only the descriptor's start-address field moves (16 KiB >> 4 = 1024).
TEST(Sm100Desc, MWaveOffset) {
  EXPECT_EQ(WaveXOffsetBytes(0, 128), 0u);
  EXPECT_EQ(WaveXOffsetBytes(1, 128), 16384u);
  EXPECT_EQ(WaveXOffsetBytes(1, 128) % kSwizzleAtomBytes, 0u);  // swizzle phase kept
  const uint64_t d0 = MakeKMajorDesc(0x8000);
  const uint64_t d1 = AdvanceDesc(d0, WaveXOffsetBytes(1, 128));
  EXPECT_EQ(d1 - d0, 1024u);
  EXPECT_EQ(d1, MakeKMajorDesc(0x8000 + 16384));
  // K-slice advance on top of the wave offset: same as a descriptor built at the sum.
  EXPECT_EQ(AdvanceDesc(d0, WaveXOffsetBytes(1, 128) + 3 * KSliceAdvanceBytes(Major::kK, 16)),
            MakeKMajorDesc(0x8000 + 16384 + 96));
}

// The manual's "Critical Insight: Accumulation Flag for M-Waves": RIGHT = (kb > 0 || k > 0), the
// same for every wave; WRONG = (kb > 0 || k > 0 || w > 0).
TEST(Sm100Desc, AccumulateFlagIgnoresWave) {
  EXPECT_EQ(AccumulateFlag(0, 0), 0u);  // every wave clears on the tile's first K step
  EXPECT_EQ(AccumulateFlag(0, 1), 1u);
  EXPECT_EQ(AccumulateFlag(0, 3), 1u);
  EXPECT_EQ(AccumulateFlag(1, 0), 1u);
  EXPECT_EQ(AccumulateFlag(7, 2), 1u);
  // Per (kb, k): exactly one clearing MMA per wave per tile; the manual's WRONG rule would let
  // wave 1 accumulate onto the previous tile's values at (0, 0).
  for (int32_t kb = 0; kb < 4; ++kb) {
    for (int32_t k = 0; k < 4; ++k) {
      for (int32_t w = 0; w < 2; ++w) {
        const uint32_t wrong = (kb > 0 || k > 0 || w > 0) ? 1u : 0u;
        EXPECT_EQ(AccumulateFlag(kb, k), (kb == 0 && k == 0) ? 0u : 1u);
        if (kb == 0 && k == 0 && w == 1) EXPECT_NE(AccumulateFlag(kb, k), wrong);
      }
    }
  }
}

}  // namespace
}  // namespace gemm::kernel::sm100
