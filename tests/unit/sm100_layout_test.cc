// Agreement of the SM100 kernel's two views of an operand stage: where TMA (box {64, rows},
// CU_TENSOR_MAP_SWIZZLE_128B) puts element (row, k), and where tcgen05.mma reads it through the
// shared memory descriptor (kernel/src/sm100/sm100_desc.h), using the PTX ISA canonical layouts
// (K-major 128B: ((8,m),(T,2k)):((8T,SBO),(1,T)); MN-major 128B: ((T,8,m),(8,k)):((1,T,LBO),
// (8T,SBO)); T = 8 bf16) with LBO/SBO/start decoded from the descriptor bits, the K-slice
// advance applied, and Swizzle<3,4,3> on the absolute address (both agents swizzle the address).
#include <cstdint>

#include "gtest/gtest.h"
#include "sm100/sm100_config.h"
#include "sm100/sm100_desc.h"
#include "sm100/sm100_epilogue_layout.h"

namespace gemm::kernel::sm100 {
namespace {

struct Decoded {
  uint32_t start, lbo, sbo;
};

Decoded Decode(uint64_t desc) {
  return {static_cast<uint32_t>(desc & 0x3FFF) << 4,
          static_cast<uint32_t>((desc >> 16) & 0x3FFF) << 4,
          static_cast<uint32_t>((desc >> 32) & 0x3FFF) << 4};
}

// Byte address UMMA reads for element (mn, k) of a K=16 slice, K-major SW128 canonical layout.
uint32_t UmmaKMajor(const Decoded& d, uint32_t mn, uint32_t k) {
  const uint32_t logical = d.start + (mn % 8) * 128 + (mn / 8) * d.sbo + k * 2;
  return Swizzle128B(logical);
}

// Same for MN-major SW128: 64-element MN atoms LBO apart, 8-row K groups SBO apart.
uint32_t UmmaMnMajor(const Decoded& d, uint32_t mn, uint32_t k) {
  const uint32_t logical =
      d.start + (mn % 64) * 2 + (mn / 64) * d.lbo + (k % 8) * 128 + (k / 8) * d.sbo;
  return Swizzle128B(logical);
}

// Where TMA stores element (row, k) of a K-major box {64 K, rows} at `base` (1024-aligned).
uint32_t TmaKMajor(uint32_t base, uint32_t row, uint32_t k) {
  return Swizzle128B(base + row * 128 + k * 2);
}

// Where TMA stores element (mn, k) when the stage is rows/64 MN-major boxes {64 MN, 64 K}.
uint32_t TmaMnMajor(uint32_t base, uint32_t mn, uint32_t k) {
  return Swizzle128B(base + (mn / 64) * 64 * 128 + k * 128 + (mn % 64) * 2);
}

TEST(Sm100Layout, KMajorDescriptorReadsWhatTmaWrote) {
  for (uint32_t base : {0u, 32768u, 5u * 16384u}) {
    for (uint32_t rows : {64u, 128u}) {
      for (uint32_t slice = 0; slice < 4; ++slice) {
        const uint64_t desc =
            AdvanceDesc(MakeKMajorDesc(base), slice * KSliceAdvanceBytes(Major::kK, 16));
        const Decoded d = Decode(desc);
        for (uint32_t mn = 0; mn < rows; ++mn) {
          for (uint32_t k = 0; k < 16; ++k) {
            ASSERT_EQ(UmmaKMajor(d, mn, k), TmaKMajor(base, mn, slice * 16 + k))
                << "base " << base << " slice " << slice << " mn " << mn << " k " << k;
          }
        }
      }
    }
  }
}

TEST(Sm100Layout, MnMajorDescriptorReadsWhatTmaWrote) {
  for (uint32_t base : {0u, 32768u, 3u * 16384u}) {
    for (uint32_t slice = 0; slice < 4; ++slice) {
      const uint64_t desc =
          AdvanceDesc(MakeMnMajorDesc(base, 64 * 128), slice * KSliceAdvanceBytes(Major::kMN, 16));
      const Decoded d = Decode(desc);
      for (uint32_t mn = 0; mn < 128; ++mn) {
        for (uint32_t k = 0; k < 16; ++k) {
          ASSERT_EQ(UmmaMnMajor(d, mn, k), TmaMnMajor(base, mn, slice * 16 + k))
              << "base " << base << " slice " << slice << " mn " << mn << " k " << k;
        }
      }
    }
  }
}

// Two M-waves: the X stage is ONE TMA box of 256 rows; wave w's UMMA reads
// its 128 rows (TMEM lanes 0..127) through a descriptor started WaveXOffsetBytes(w) in.
TEST(Sm100Layout, MWaveDescriptorsReadTheirHalfOfTheBox) {
  using Cfg = KernelConfig<256, false, false, 2>;
  for (int s = 0; s < Cfg::kStages; ++s) {
    const uint32_t base = Cfg::kXOffset + s * Cfg::kXStageBytes;
    for (uint32_t wave = 0; wave < 2; ++wave) {
      for (uint32_t slice = 0; slice < 4; ++slice) {
        const uint64_t desc =
            AdvanceDesc(MakeKMajorDesc(base), WaveXOffsetBytes(wave, Cfg::kWaveRows) +
                                                  slice * KSliceAdvanceBytes(Major::kK, 16));
        const Decoded d = Decode(desc);
        for (uint32_t lane = 0; lane < 128; ++lane) {
          for (uint32_t k = 0; k < 16; ++k) {
            ASSERT_EQ(UmmaKMajor(d, lane, k), TmaKMajor(base, wave * 128 + lane, slice * 16 + k))
                << "stage " << s << " wave " << wave << " slice " << slice << " lane " << lane;
          }
        }
      }
    }
  }
}

TEST(Sm100Layout, StageBasesKeepSwizzlePhase) {
  // Base offset 0 in the descriptor requires every stage to start on a 1024-byte boundary.
  using Wide = KernelConfig<256, false, false>;
  using Swap = KernelConfig<128, true, false>;
  using Wide2 = KernelConfig<256, false, false, 2>;
  for (int s = 0; s < Wide2::kStages; ++s) {
    EXPECT_EQ((Wide2::kXOffset + s * Wide2::kXStageBytes) % 1024, 0u);
    EXPECT_EQ((Wide2::kXOffset + s * Wide2::kXStageBytes + Wide2::kXWaveBytes) % 1024, 0u);
    EXPECT_EQ((Wide2::kYOffset + s * Wide2::kYStageBytes) % 1024, 0u);
  }
  for (int s = 0; s < Wide::kStages; ++s) {
    EXPECT_EQ((Wide::kXOffset + s * Wide::kXStageBytes) % 1024, 0u);
    EXPECT_EQ((Wide::kYOffset + s * Wide::kYStageBytes) % 1024, 0u);
  }
  for (int s = 0; s < Swap::kStages; ++s) {
    EXPECT_EQ((Swap::kYOffset + s * Swap::kYStageBytes) % 1024, 0u);
  }
}

}  // namespace
}  // namespace gemm::kernel::sm100
