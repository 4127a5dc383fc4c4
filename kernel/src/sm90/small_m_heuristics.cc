// Launch-plan choice of the small-M kernel (tile height, stream-K grid size, workspace): pure
// host arithmetic, unit-tested without a GPU.
#include <algorithm>
#include <cstdint>

#include "sm90/small_m_gemm.h"

namespace gemm::kernel::sm90 {
namespace {

constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// NOTE: CTAs per SM, measured on H200 (decode set, docs/PERF.md): with a 16-row activation
// tile one CTA per SM streams B fastest (fewer shared tiles); taller tiles are bound by MMA
// issue latency and gain from a second CTA per SM (M = 32: up to 15%, M = 64: up to 12%).
constexpr int64_t CtasPerSm(int m_tile) { return m_tile <= 16 ? 1 : 2; }
// Fewest K blocks per CTA before it pays to use fewer CTAs.
constexpr int64_t kMinItersPerCta = 4;
// NOTE: what the stream-K fixup kernel costs, in bytes of B streamed at ~4 TB/s: ~2 us, measured
// on H200 (docs/kernel-design.md, "SM90: the small-M kernel"). A tile-aligned grid that leaves
// SMs idle loses their share of B: it is chosen only while that share stays below this.
constexpr double kFixupCostBytes = 8.0 * (1 << 20);

}  // namespace

bool UseSmallM(int64_t m, int64_t n, int64_t k, int64_t batch) {
  if (m < 1 || m > kSmallMMaxRows || n < 1 || k < 1) return false;
  // In double: no product of int64 values can overflow; exact far beyond the threshold's scale.
  const double weight_bytes =
      static_cast<double>(std::max<int64_t>(batch, 1)) * static_cast<double>(n) * k * 2.0;
  return weight_bytes <= kSmallMMaxWeightBytes;
}

bool UseSmallM(const StridedBatch& args) {
  const Problem& p = args.problem;
  return UseSmallM(p.m, p.n, p.k, args.batch);
}

SmallMPlan PlanSmallM(const StridedBatch& args, int sm_count, int64_t force_ctas,
                      const SmallMClusterLimits* clusters) {
  const Problem& p = args.problem;
  SmallMPlan plan;
  plan.m_tile = p.m <= 16 ? 16 : p.m <= 32 ? 32 : p.m <= 64 ? 64 : 128;
  plan.n_tiles = CeilDiv(std::max<int64_t>(p.n, 1), plan.n_tile);
  plan.k_blocks = CeilDiv(std::max<int64_t>(p.k, 1), plan.k_block);
  const int64_t batch = std::max<int64_t>(args.batch, 1);
  plan.total_iters = batch * plan.n_tiles * plan.k_blocks;
  int64_t ctas = 0;
  if (force_ctas > 0) {
    ctas = force_ctas;
  } else {
    ctas = std::max<int64_t>(sm_count, 1) * CtasPerSm(plan.m_tile);
    // Small problems: keep a few K blocks per CTA, but never fewer CTAs than tiles.
    ctas =
        std::min(ctas, std::max(CeilDiv(plan.total_iters, kMinItersPerCta), batch * plan.n_tiles));
  }
  plan.ctas = std::clamp<int64_t>(ctas, 1, plan.total_iters);
  // A tile is shared unless every CTA boundary falls on a tile boundary, which holds exactly
  // when the CTAs are a whole number of tiles each (or one tile per CTA).
  plan.split_tiles = false;
  for (int64_t c = 1; c < plan.ctas && !plan.split_tiles; ++c) {
    plan.split_tiles = (c * plan.total_iters / plan.ctas) % plan.k_blocks != 0;
  }
  plan.workspace_bytes =
      plan.split_tiles ? static_cast<std::size_t>(plan.ctas) * 2 * p.m * plan.n_tile * sizeof(float)
                       : 0;
  if (force_ctas > 0 || clusters == nullptr || plan.m_tile != 16 || !plan.split_tiles) return plan;
  // NOTE: measured on H200 (docs/kernel-design.md, "Cluster split-K"): 128 CTAs in clusters of 2
  // beat 132 stream-K CTAs at 16x8192x8192 (39-40 vs 41 us) but not at 1x8192x28672 with B [K,N]
  // (122 vs 117 us), where the 4 idle SMs' share of B outweighs the fixup. With B [N,K] they won
  // there too (115 vs 115.5 us at M = 1, 116 vs 119 at M = 16): the share limit is for [K,N].
  const int64_t slots = std::max<int64_t>(sm_count, 1);
  const int64_t tiles = batch * plan.n_tiles;
  const double b_bytes = static_cast<double>(batch) * p.n * p.k * 2;
  const bool kn = p.b_layout == BLayout::kKN;
  auto fills = [&](int64_t grid) {
    return grid <= slots && grid * 20 >= slots * 19 &&
           (!kn || b_bytes * static_cast<double>(slots - grid) / static_cast<double>(slots) <=
                       kFixupCostBytes);
  };
  for (int cs : {1, 2, 4, 8}) {
    const int64_t grid = tiles * cs;
    if (!fills(grid) || plan.k_blocks < cs * kMinItersPerCta) continue;
    if (cs > 1 && clusters->For(cs) < tiles) continue;  // every cluster must fit at once
    plan.ctas = grid;
    plan.cluster_k = cs;
    plan.split_tiles = false;
    plan.workspace_bytes = 0;
    break;
  }
  return plan;
}

std::size_t SmallMWorkspaceBytes(const StridedBatch& args, int sm_count) {
  return PlanSmallM(args, sm_count).workspace_bytes;
}

}  // namespace gemm::kernel::sm90
