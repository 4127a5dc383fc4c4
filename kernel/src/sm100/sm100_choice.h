// Which compiled SM100 variant a strided batch runs, and with how many K splits: the one choice
// the host launcher (sm100_gemm.cc) makes and the qualification case list (qualification_cases.cc)
// predicts. Pure host C++ with no CUDA include, unit-tested on the CPU.
#pragma once

#include <cstdint>

#include "sm100/sm100_config.h"
#include "sm100/sm100_split.h"
#include "sm100/sm100_variant.h"

namespace gemm::kernel::sm100 {

// M at or below which the swap-AB kernel runs (B fills the MMA's 256-row M slot).
inline constexpr int64_t kSmallM = 128;

// The facts of one strided batch the choice depends on.
struct BatchQuery {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool b_kn = false;  // B stored [K,N]
  bool out_f32 = false;
  float alpha = 1.0f, beta = 0.0f;  // beta only counts with a C operand (set 0 without one)
  int resident_clusters = 0;        // co-resident 2-CTA clusters on the device
  int forced_m_waves = 0;           // 1 or 2 to force the wide kernel's M-waves; 0: heuristic
  uint64_t scratch_bytes = 0;       // split-K workspace lent by the caller (16-byte aligned)
};

struct BatchChoice {
  VariantKey key;      // the variant that computes the GEMM (FP32 partials when split)
  int32_t splits = 1;  // > 1: split-K partials, then the split reduction writes D
  int64_t tiles = 0;   // work units before splitting
};

// The variant key of a problem in the given kernel (M-waves left at 1).
constexpr VariantKey KeyOf(bool b_kn, bool out_f32, bool swap_ab) {
  VariantKey key;
  key.swap_ab = swap_ab;
  key.x_mn_major = swap_ab && b_kn;
  key.y_mn_major = !swap_ab && b_kn;
  key.out_f32 = out_f32;
  return key;
}

// The kernel's view of the batch's shape (X in the MMA's M slot).
constexpr ProblemShape ShapeOf(const BatchQuery& q, bool swap_ab) {
  ProblemShape s;
  s.rows_x = static_cast<int32_t>(swap_ab ? q.n : q.m);
  s.rows_y = static_cast<int32_t>(swap_ab ? q.m : q.n);
  s.k = static_cast<int32_t>(q.k);
  s.alpha = q.alpha;
  s.beta = q.beta;
  return s;
}

// The variant and split of `q` (dimensions already checked to fit in int32).
inline BatchChoice ChooseBatch(const BatchQuery& q) {
  BatchChoice c;
  const bool swap_ab = q.m <= kSmallM;
  c.key = KeyOf(q.b_kn, q.out_f32, swap_ab);
  if (!swap_ab) {
    c.key.m_waves = q.forced_m_waves != 0
                        ? q.forced_m_waves
                        : ChooseMWaves(q.m, q.n, q.k, q.batch, q.resident_clusters);
  }
  const ProblemShape shape = ShapeOf(q, swap_ab);
  c.tiles = TotalTiles(c.key, &shape, static_cast<int32_t>(q.batch), true);
  if (swap_ab && q.batch == 1) {
    // Decode: too few N tiles to occupy the GPU; split K across the idle clusters.
    const int32_t k_blocks = static_cast<int32_t>((q.k + 63) / 64);
    c.splits = ChooseKSplits(c.tiles, q.resident_clusters, k_blocks,
                             q.scratch_bytes > 0 ? MaxSplitsFor(q.scratch_bytes, q.m, q.n) : 0);
    if (c.splits > 1) c.key.out_f32 = true;  // partials
  }
  return c;
}

}  // namespace gemm::kernel::sm100
