// The 12 compiled variants of the SM100 kernel and the one source of their geometry: which
// KernelConfig a VariantKey names, its index and name, the TMA boxes the host encodes and the tile
// counts it launches, all derived from KernelConfig (the device derives its expect_tx bytes and
// tiles from the same config). Pure host/device C++ with no CUDA include, unit-tested on the CPU
// (tests/unit/sm100_geometry_test.cc).
#pragma once

#include <cstdint>
#include <string>

#include "sm100/sm100_config.h"
#include "sm100/sm100_scheduler.h"

namespace gemm::kernel::sm100 {

// Which compiled variant to launch.
struct VariantKey {
  bool swap_ab = false;     // small-M kernel: B in the MMA's M slot
  bool x_mn_major = false;  // X operand is MN-major in global memory (B as [K,N] when swapped)
  bool y_mn_major = false;  // Y operand is MN-major (B as [K,N] when not swapped)
  bool out_f32 = false;
  int m_waves = 1;  // wide kernel only: 1 (256 x 256 cluster tiles) or 2 (512 x 256)
};

using WideBf16 = KernelConfig<256, false, false>;
using WideF32 = KernelConfig<256, false, true>;
using SwapBf16 = KernelConfig<128, true, false>;
using SwapF32 = KernelConfig<128, true, true>;
// Two M-waves: 512 x 256 cluster tiles, one TMEM accumulator.
using Wide2Bf16 = KernelConfig<256, false, false, 2>;
using Wide2F32 = KernelConfig<256, false, true, 2>;

// Names one compiled variant: config, X MN-major, Y MN-major.
template <class Cfg, bool kXMn, bool kYMn>
struct Variant {};

// Calls f(Variant<Cfg, kXMn, kYMn>{}) for the variant `key` names and returns its result.
template <class F>
constexpr auto WithVariant(const VariantKey& key, F&& f) {
  if (key.swap_ab) {
    // X = B (MN-major when B is [K,N]), Y = A (always K-major).
    if (key.out_f32) {
      return key.x_mn_major ? f(Variant<SwapF32, true, false>{})
                            : f(Variant<SwapF32, false, false>{});
    }
    return key.x_mn_major ? f(Variant<SwapBf16, true, false>{})
                          : f(Variant<SwapBf16, false, false>{});
  }
  // X = A (K-major), Y = B (MN-major when B is [K,N]).
  if (key.m_waves == 2) {
    if (key.out_f32) {
      return key.y_mn_major ? f(Variant<Wide2F32, false, true>{})
                            : f(Variant<Wide2F32, false, false>{});
    }
    return key.y_mn_major ? f(Variant<Wide2Bf16, false, true>{})
                          : f(Variant<Wide2Bf16, false, false>{});
  }
  if (key.out_f32) {
    return key.y_mn_major ? f(Variant<WideF32, false, true>{})
                          : f(Variant<WideF32, false, false>{});
  }
  return key.y_mn_major ? f(Variant<WideBf16, false, true>{})
                        : f(Variant<WideBf16, false, false>{});
}

// Number of compiled variants: 3 kernels (swap-AB, wide, wide with 2 M-waves) x B layout x output
// dtype.
inline constexpr int kNumVariants = 12;

// Dense index in [0, kNumVariants) of a (normalised) key: kernel * 4 + B-MN-major * 2 + FP32 out.
constexpr int VariantIndex(const VariantKey& key) {
  const int kernel = key.swap_ab ? 0 : (key.m_waves == 2 ? 2 : 1);
  const bool b_mn = key.swap_ab ? key.x_mn_major : key.y_mn_major;
  return kernel * 4 + (b_mn ? 2 : 0) + (key.out_f32 ? 1 : 0);
}

// The key of variant `index` (inverse of VariantIndex).
constexpr VariantKey VariantAt(int index) {
  VariantKey key;
  const int kernel = index / 4;
  const bool b_mn = (index / 2) % 2 != 0;
  key.swap_ab = kernel == 0;
  key.m_waves = kernel == 2 ? 2 : 1;
  key.x_mn_major = key.swap_ab && b_mn;
  key.y_mn_major = !key.swap_ab && b_mn;
  key.out_f32 = index % 2 != 0;
  return key;
}

// Stable name of a variant, e.g. "sm100.swap_ab.kn.bf16" or "sm100.wide2.nk.fp32".
inline std::string VariantName(const VariantKey& key) {
  const char* kernel = key.swap_ab ? "swap_ab" : (key.m_waves == 2 ? "wide2" : "wide");
  const bool b_mn = key.swap_ab ? key.x_mn_major : key.y_mn_major;
  return std::string("sm100.") + kernel + (b_mn ? ".kn" : ".nk") +
         (key.out_f32 ? ".fp32" : ".bf16");
}

// One TMA box: `inner` x `outer` elements of `elem_bytes`, issued `count` times per use.
struct Box {
  uint32_t inner = 0, outer = 0, count = 1, elem_bytes = 2;
  constexpr uint32_t Bytes() const { return inner * outer * count * elem_bytes; }
};

// The boxes of one variant: per pipeline stage the X and Y operand loads of one CTA, and per
// epilogue chunk the C load / D store of one warp.
struct Geometry {
  Box x, y, out;
  bool out_swizzle_128b = false;
  uint32_t stage_bytes = 0;  // the device's expect_tx per CTA and stage (Cfg::kStageBytes)
  uint32_t chunk_bytes = 0;  // the device's expect_tx per C chunk (Cfg::kEpiChunkBytes)
  int cluster_block_x = 0, cluster_block_y = 0, block_k = 0;
};

// An operand's load of kRows rows x kBlockK: K-major one box {kBlockK, kRows}; MN-major kRows/64
// boxes {64 MN, kBlockK} (one 128-byte swizzle row of MN each; LoadOperand in the kernel).
template <class Cfg>
constexpr Box OperandBox(bool mn_major, int rows) {
  if (mn_major) {
    return Box{64, static_cast<uint32_t>(Cfg::kBlockK), static_cast<uint32_t>(rows / 64), 2};
  }
  return Box{static_cast<uint32_t>(Cfg::kBlockK), static_cast<uint32_t>(rows), 1, 2};
}

// The geometry of `key`, derived from its KernelConfig.
constexpr Geometry GeometryOf(const VariantKey& key) {
  return WithVariant(key, []<class Cfg, bool kXMn, bool kYMn>(Variant<Cfg, kXMn, kYMn>) {
    Geometry g;
    g.x = OperandBox<Cfg>(kXMn, Cfg::kRowsX);
    g.y = OperandBox<Cfg>(kYMn, Cfg::kRowsY);
    // D (and C) boxes, (inner, outer) over row-major [M, N]: wide, 32 rows x one 128-byte
    // swizzle row of columns; swap-AB, 32 N columns x 32 M rows (the transposed epilogue).
    g.out = Box{static_cast<uint32_t>(Cfg::kEpiColsPerChunk), 32, 1,
                static_cast<uint32_t>(Cfg::kOutBytes)};
    g.out_swizzle_128b = !Cfg::kSwapAB;
    g.stage_bytes = Cfg::kStageBytes;
    g.chunk_bytes = Cfg::kEpiChunkBytes;
    g.cluster_block_x = Cfg::kClusterBlockX;
    g.cluster_block_y = Cfg::kClusterBlockY;
    g.block_k = Cfg::kBlockK;
    return g;
  });
}

// Work units of `key` over `shapes` (its cluster tile: 256 x 128 swapped, 256 or 512 x 256 wide),
// counted by the same TileScheduler the device runs.
inline int64_t TotalTiles(const VariantKey& key, const ProblemShape* shapes, int32_t n,
                          bool uniform) {
  return WithVariant(key, [&]<class Cfg, bool kXMn, bool kYMn>(Variant<Cfg, kXMn, kYMn>) {
    return static_cast<int64_t>(
        TileScheduler<Cfg::kClusterBlockX, Cfg::kClusterBlockY, Cfg::kBlockK>::TotalTiles(shapes, n,
                                                                                          uniform));
  });
}

}  // namespace gemm::kernel::sm100
