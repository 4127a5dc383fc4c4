// Launch-plan choice of the small-M kernel (tile height, split-K factor): pure host arithmetic,
// unit-tested without a GPU.
#include <algorithm>
#include <cstdint>

#include "sm90/small_m_gemm.h"

namespace gemm::kernel::sm90 {
namespace {

constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// NOTE: the kernel is designed for two resident CTAs per SM (<= 113 KB smem, <= 128 registers).
constexpr int kCtasPerSm = 2;
constexpr int kMaxSplits = 32;

}  // namespace

bool UseSmallM(const StridedBatch& args, int /*sm_count*/) {
  const Problem& p = args.problem;
  return p.m >= 1 && p.m <= 128 && p.n >= 1 && p.k >= 1;
}

SmallMPlan PlanSmallM(const StridedBatch& args, int sm_count, int force_splits) {
  const Problem& p = args.problem;
  SmallMPlan plan;
  plan.m_tile = p.m <= 16 ? 16 : p.m <= 32 ? 32 : p.m <= 64 ? 64 : 128;
  plan.n_tiles = CeilDiv(std::max<int64_t>(p.n, 1), plan.n_tile);
  plan.k_blocks = CeilDiv(std::max<int64_t>(p.k, 1), plan.k_block);
  const int64_t batch = std::max<int64_t>(args.batch, 1);
  const int64_t sms = std::max(sm_count, 1);
  const int64_t max_splits = std::min<int64_t>(kMaxSplits, plan.k_blocks);

  int best = 1;
  if (force_splits > 0) {
    best = static_cast<int>(std::clamp<int64_t>(force_splits, 1, max_splits));
  } else {
    // Cost in bytes-equivalent of HBM traffic. The busiest SM streams ceil(ctas / sms) CTAs of
    // ceil(k_blocks / s) stages each (+2 stages of prologue/epilogue latency); one CTA alone on
    // an SM keeps fewer bytes in flight (penalty). Split-K adds FP32 partials written and read
    // back, plus one extra (overlapped) launch.
    const double stage_bytes = static_cast<double>(plan.n_tile) * plan.k_block * 2;
    double best_cost = 0;
    for (int64_t s = 1; s <= max_splits; ++s) {
      const int64_t ctas = plan.n_tiles * s * batch;
      const int64_t per_sm = CeilDiv(ctas, sms);
      const double steps = static_cast<double>(CeilDiv(plan.k_blocks, s) + 2);
      double cost = static_cast<double>(per_sm) * steps * stage_bytes * static_cast<double>(sms);
      if (ctas < kCtasPerSm * sms) cost *= 1.15;
      if (s > 1) cost += 8.0 * s * batch * p.m * p.n + 4.0e6;
      if (s == 1 || cost < best_cost * 0.98) {
        best_cost = cost;
        best = static_cast<int>(s);
      }
    }
  }
  plan.splits = best;
  plan.workspace_bytes =
      best > 1 ? static_cast<std::size_t>(best) * batch * p.m * p.n * sizeof(float) : 0;
  return plan;
}

std::size_t SmallMWorkspaceBytes(const StridedBatch& args, int sm_count) {
  return PlanSmallM(args, sm_count).workspace_bytes;
}

}  // namespace gemm::kernel::sm90
