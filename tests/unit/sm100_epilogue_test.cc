// Tests of the SM100 epilogue address math (kernel/src/sm100/sm100_epilogue_layout.h): the
// 128B-swizzled staging offsets equal CuTe's Swizzle<3,4,3> (the PTX ISA's 128-byte swizzling
// mode, which TMA SWIZZLE_128B applies), they are a permutation inside each 1024-byte atom, the
// epilogue's stores are bank-conflict free, and TMEM addresses put the lane in bits 16-31.
#include <cstdint>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "sm100/sm100_config.h"
#include "sm100/sm100_epilogue_layout.h"

namespace gemm::kernel::sm100 {
namespace {

TEST(Sm100Epilogue, SwizzleIsSwizzle343) {
  // Swizzle<B=3, M=4, S=3>: addr ^ ((addr & (0b111 << 7)) >> 3).
  for (uint32_t off = 0; off < 4096; off += 16) {
    EXPECT_EQ(Swizzle128B(off), off ^ ((off & (7u << 7)) >> 3));
  }
  for (uint32_t row = 0; row < 32; ++row) {
    for (uint32_t chunk = 0; chunk < 8; ++chunk) {
      EXPECT_EQ(SwizzledChunkOffset(row, chunk), Swizzle128B(row * 128 + chunk * 16));
    }
  }
}

TEST(Sm100Epilogue, KnownSwizzleValues) {
  // Row 0 is unswizzled; row 1 swaps 16-byte chunk pairs; row 7 reverses the chunks.
  EXPECT_EQ(SwizzledChunkOffset(0, 3), 48u);
  EXPECT_EQ(SwizzledChunkOffset(1, 0), 128u + 16u);
  EXPECT_EQ(SwizzledChunkOffset(1, 1), 128u + 0u);
  EXPECT_EQ(SwizzledChunkOffset(7, 0), 7 * 128u + 7 * 16u);
  EXPECT_EQ(SwizzledChunkOffset(8, 5), 8 * 128u + 5 * 16u);  // pattern repeats every 8 rows
}

TEST(Sm100Epilogue, PermutationWithinEachAtom) {
  for (uint32_t atom = 0; atom < 4; ++atom) {
    std::set<uint32_t> offsets;
    for (uint32_t r = 0; r < 8; ++r) {
      for (uint32_t c = 0; c < 8; ++c) {
        const uint32_t off = SwizzledChunkOffset(atom * 8 + r, c);
        EXPECT_GE(off, atom * 1024);
        EXPECT_LT(off, (atom + 1) * 1024);
        offsets.insert(off);
      }
    }
    EXPECT_EQ(offsets.size(), 64u);
  }
}

TEST(Sm100Epilogue, QuarterWarpStoresAreConflictFree) {
  // A 16-byte store is served per 8 threads (quarter warp); lane = row, all store chunk j.
  for (uint32_t j = 0; j < 8; ++j) {
    for (uint32_t q = 0; q < 4; ++q) {
      std::set<uint32_t> bank_groups;  // 4-bank (16-byte) groups out of 32 banks
      for (uint32_t l = 0; l < 8; ++l) {
        bank_groups.insert((SwizzledChunkOffset(q * 8 + l, j) / 16) % 8);
      }
      EXPECT_EQ(bank_groups.size(), 8u) << "chunk " << j;
    }
  }
}

TEST(Sm100Epilogue, TransposedTileIsConflictFree) {
  // Swap-AB staging: lane = column n; for a fixed row m the warp writes consecutive elements.
  for (uint32_t es : {2u, 4u}) {
    for (uint32_t m = 0; m < 32; ++m) {
      std::set<uint32_t> words;
      for (uint32_t n = 0; n < 32; ++n) {
        const uint32_t off = TransposedOffset(m, n, es);
        EXPECT_EQ(off, (m * 32 + n) * es);
        words.insert(off / 4);
      }
      std::set<uint32_t> banks;
      for (uint32_t w : words) banks.insert(w % 32);
      EXPECT_EQ(banks.size(), words.size());  // distinct words never share a bank
    }
  }
}

TEST(Sm100Epilogue, TmemAddressing) {
  // Lane in bits 16-31, column in bits 0-15 (tcgen05 for dummies' epilogue:
  // taddr + (row << 16) + col).
  EXPECT_EQ(TmemAddr(0, 0, 0), 0u);
  EXPECT_EQ(TmemAddr(0, 32, 256), (32u << 16) | 256u);
  EXPECT_EQ(TmemAddr(0x100, 96, 31), (96u << 16) + 0x100u + 31u);
  // Warps 4-7 (epilogue) reach lanes 0, 32, 64, 96 (tcgen05.ld: warp w -> 32*(w%4)).
  EXPECT_EQ(WarpTmemLane(4), 0u);
  EXPECT_EQ(WarpTmemLane(5), 32u);
  EXPECT_EQ(WarpTmemLane(6), 64u);
  EXPECT_EQ(WarpTmemLane(7), 96u);
}

// TMEM columns of (accumulator, wave): DeepGEMM's accum_stage_idx * kNumMWaves * BLOCK_N + w *
// BLOCK_N; disjoint, inside the allocation, for both kernel shapes.
template <class Cfg>
void CheckAccumColumns() {
  std::vector<int> owner(Cfg::kTmemCols, -1);
  for (uint32_t acc = 0; acc < static_cast<uint32_t>(Cfg::kAccumStages); ++acc) {
    for (uint32_t w = 0; w < static_cast<uint32_t>(Cfg::kMWaves); ++w) {
      const uint32_t c0 = AccumColumn(acc, w, Cfg::kUmmaN, Cfg::kMWaves);
      for (uint32_t c = c0; c < c0 + Cfg::kUmmaN; ++c) {
        ASSERT_LT(c, Cfg::kTmemCols);
        EXPECT_EQ(owner[c], -1) << "column " << c << " used twice";
        owner[c] = static_cast<int>(acc * 2 + w);
      }
    }
  }
  for (uint32_t c = 0; c < Cfg::kTmemCols; ++c) EXPECT_NE(owner[c], -1) << "column " << c;
}

TEST(Sm100Epilogue, MWaveTmemColumns) {
  EXPECT_EQ(AccumColumn(0, 0, 256, 1), 0u);
  EXPECT_EQ(AccumColumn(1, 0, 256, 1), 256u);  // 1 wave: double buffer at 0 / 256
  EXPECT_EQ(AccumColumn(0, 1, 256, 2), 256u);  // 2 waves: wave 1 at 256, one accumulator
  CheckAccumColumns<KernelConfig<256, false, false>>();
  CheckAccumColumns<KernelConfig<256, false, false, 2>>();
  CheckAccumColumns<KernelConfig<128, true, false>>();
  // TMEM address of wave 1, lane 96: lane in the high half, column in the low half.
  EXPECT_EQ(TmemAddr(0x10000000u, 96, AccumColumn(0, 1, 256, 2)), 0x10000000u + (96u << 16) + 256u);
}

// Rows the epilogue writes for (rank, wave, warp quarter, lane) = the rows the UMMA put in that
// CTA's TMEM lane: cta_group::2 with M = 256 splits D as [d0; d1] (rows 0..127 in CTA 0's lanes,
// 128..255 in CTA 1's), A as [a0; a1] (each CTA's X stage supplies its own 128 rows), and wave w
// reads rows w*128.. of the CTA's 256-row X box. Each cluster-tile row exactly once.
TEST(Sm100Epilogue, MWaveRowMapping) {
  using Cfg = KernelConfig<256, false, false, 2>;
  for (int64_t bx : {0, 1, 7}) {
    std::vector<int> seen(Cfg::kClusterBlockX, 0);
    for (uint32_t rank = 0; rank < 2; ++rank) {
      // X rows CTA `rank` loaded (one box of kRowsX rows) and the row in stage position j.
      const int64_t x0 = bx * Cfg::kClusterBlockX + rank * Cfg::kRowsX;
      for (uint32_t w = 0; w < 2; ++w) {
        for (uint32_t q = 0; q < 4; ++q) {
          for (uint32_t lane = 0; lane < 32; ++lane) {
            const uint32_t tmem_lane = WarpTmemLane(kFirstEpilogueWarp + q) + lane;
            const int64_t row =
                EpilogueRow(bx, Cfg::kClusterBlockX, rank, Cfg::kRowsX, w, q) + lane;
            // The UMMA row of wave w that landed in this CTA's TMEM lane.
            const int64_t umma_row = static_cast<int64_t>(rank) * 128 + tmem_lane;  // 0..255
            const int64_t stage_row = w * Cfg::kWaveRows + (umma_row - rank * 128);
            EXPECT_EQ(row, x0 + stage_row);
            const int64_t local = row - bx * Cfg::kClusterBlockX;
            ASSERT_GE(local, 0);
            ASSERT_LT(local, Cfg::kClusterBlockX);
            ++seen[local];
          }
        }
      }
    }
    for (int r = 0; r < Cfg::kClusterBlockX; ++r) EXPECT_EQ(seen[r], 1) << "row " << r;
  }
  // One wave: the old mapping (block_x * 256 + rank * 128 + 32 * quarter).
  EXPECT_EQ(EpilogueRow(3, 256, 1, 128, 0, 2), 3 * 256 + 128 + 64);
  // Two waves: CTA 1, wave 1, quarter 3 of tile 2 starts at 2*512 + 256 + 128 + 96.
  EXPECT_EQ(EpilogueRow(2, 512, 1, 256, 1, 3), 2 * 512 + 256 + 128 + 96);
}

}  // namespace
}  // namespace gemm::kernel::sm100
