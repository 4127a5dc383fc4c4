// The qualification case list (gemm/qualification.h). The cases are chosen so that the
// launcher's own choice (sm100_choice.h; the SM90 heuristics) lands on each compiled variant
// (the 12 of SM100; the 5 tiles, the small-M kernel and the swap-AB tiles of SM90); each case
// records the variant that choice predicts, and the runner lets the call use only that one.
#include <algorithm>
#include <optional>
#include <utility>

#include "gemm/qualification.h"
#include "heuristics_sm90.h"
#include "sm100/sm100_choice.h"
#include "sm100/sm100_split.h"
#include "sm100/sm100_variant.h"
#include "sm90/sm90_variant.h"
#include "sm90/small_m_gemm.h"

namespace gemm::kernel {
namespace {

QualificationProblem P(int64_t m, int64_t n, int64_t k, BLayout layout, DType out = DType::kBF16,
                       float alpha = 1.0f, float beta = 0.0f) {
  return {m, n, k, layout, out, alpha, beta};
}

// The SM100 variant a case runs, as the launcher will choose it.
int Sm100VariantOf(const QualificationCase& c, int sm_count) {
  const QualificationProblem& p = c.problems[0];
  if (c.problems.size() > 1) {  // grouped: the wide kernel, one M-wave
    return sm100::VariantIndex(
        sm100::KeyOf(p.b_layout == BLayout::kKN, p.d_dtype == DType::kFP32, false));
  }
  sm100::BatchQuery q{.m = p.m,
                      .n = p.n,
                      .k = p.k,
                      .batch = c.batch,
                      .b_kn = p.b_layout == BLayout::kKN,
                      .out_f32 = p.d_dtype == DType::kFP32,
                      .alpha = p.alpha,
                      .beta = p.beta,
                      .resident_clusters = sm_count / 2,
                      .forced_m_waves = c.m_waves,
                      .scratch_bytes = c.batch == 1 && p.m <= sm100::kSmallM
                                           ? sm100::SplitWorkspaceBytes(p.m, p.n)
                                           : 0};
  return sm100::VariantIndex(sm100::ChooseBatch(q).key);
}

std::vector<QualificationCase> Sm100Cases(int sm_count) {
  using enum BLayout;
  const DType f32 = DType::kFP32;
  std::vector<QualificationCase> cases = {
      // Small M (swap-AB). Batched: no split-K, the BF16/FP32 epilogues themselves.
      {"3x 64x1024x512 nk bf16 (small M, batched)", {P(64, 1024, 512, kNK)}, 3},
      {"2x 100x512x256 kn bf16 alpha=0.5 beta=1 (small M, in-kernel beta)",
       {P(100, 512, 256, kKN, DType::kBF16, 0.5f, 1.0f)},
       2},
      {"2x 48x512x256 nk fp32 beta=1 (small M)", {P(48, 512, 256, kNK, f32, 1.0f, 1.0f)}, 2},
      {"2x 128x768x320 kn fp32 (small M)", {P(128, 768, 320, kKN, f32)}, 2},
      // Single small-M problems: split-K partials (FP32 variant) and the split reduction.
      {"16x4096x4096 nk bf16 (decode, split-K)", {P(16, 4096, 4096, kNK)}},
      {"32x2048x4096 kn bf16 beta=1 (decode, split-K)",
       {P(32, 2048, 4096, kKN, DType::kBF16, 1.0f, 1.0f)}},
      // Wide, one M-wave: both layouts and dtypes, beta with C.
      {"256x256x256 kn bf16", {P(256, 256, 256, kKN)}},
      {"520x768x512 nk bf16 beta=1 (C read)", {P(520, 768, 512, kNK, DType::kBF16, 1.0f, 1.0f)}},
      {"1000x520x136 kn fp32 alpha=0.5 beta=1", {P(1000, 520, 136, kKN, f32, 0.5f, 1.0f)}},
      {"3x 320x1024x1024 nk fp32 (batched)", {P(320, 1024, 1024, kNK, f32)}, 3},
      // Wide, two M-waves (forced: the heuristic takes them only for large shapes).
      {"1024x512x2048 nk bf16 (2 M-waves)", {P(1024, 512, 2048, kNK)}, 1, false, 2},
      {"1024x512x2048 kn bf16 (2 M-waves)", {P(1024, 512, 2048, kKN)}, 1, false, 2},
      {"1536x768x1024 nk fp32 beta=1 (2 M-waves)",
       {P(1536, 768, 1024, kNK, f32, 1.0f, 1.0f)},
       1,
       false,
       2},
      {"1024x512x2048 kn fp32 (2 M-waves)", {P(1024, 512, 2048, kKN, f32)}, 1, false, 2},
      // Grouped: tensor maps read from global memory.
      {"group 128x256x512, 64x128x256, 300x200x104 nk bf16",
       {P(128, 256, 512, kNK), P(64, 128, 256, kNK), P(300, 200, 104, kNK)}},
      {"group 256x512x256, 384x256x128 kn fp32 beta=1",
       {P(256, 512, 256, kKN, f32, 1.0f, 1.0f), P(384, 256, 128, kKN, f32, 1.0f, 1.0f)}},
      // Cluster Launch Control scheduling.
      {"2048x2048x1024 kn bf16 (CLC)", {P(2048, 2048, 1024, kKN)}, 1, true},
      {"16x4096x4096 nk bf16 (decode, split-K, CLC)", {P(16, 4096, 4096, kNK)}, 1, true},
      {"2x 64x1024x512 kn fp32 (small M, CLC)", {P(64, 1024, 512, kKN, f32)}, 2, true},
      {"1024x512x2048 nk fp32 (2 M-waves, CLC)", {P(1024, 512, 2048, kNK, f32)}, 1, true, 2},
      {"group 128x256x512, 300x200x104 nk bf16 (CLC)",
       {P(128, 256, 512, kNK), P(300, 200, 104, kNK)},
       1,
       true},
  };
  for (QualificationCase& c : cases) c.variants = {Sm100VariantOf(c, sm_count)};
  return cases;
}

// The SM90 variant (sm90/sm90_variant.h) a case runs, as the dispatch and the launcher will
// choose it: the small-M kernel where UseSmallM says so, else the tile of ChooseConfig (one
// problem) or ChooseGroupConfig (a group, members in launch order).
int Sm90VariantOf(const QualificationCase& c, int sm_count) {
  const QualificationProblem& p = c.problems[0];
  const bool f32 = p.d_dtype == DType::kFP32, kn = p.b_layout == BLayout::kKN;
  // Predicted with the SM90 devices' opt-in shared memory (kSm90SmemOptin, 227 KiB). Should a
  // device with another value make the launcher choose another tile, its case fails loudly (the
  // runner allows only the predicted variant) instead of qualifying the wrong one.
  sm90::TileConfig cfg;
  if (c.problems.size() > 1) {
    std::vector<sm90::GroupMember> members;
    for (const QualificationProblem& q : c.problems) members.push_back({q.m, q.n, q.k});
    std::stable_sort(members.begin(), members.end(), [](const auto& x, const auto& y) {
      return x.k != y.k ? x.k > y.k : x.n > y.n;
    });
    cfg = sm90::ChooseGroupConfig(members, f32, kn, sm_count, sm90::kSm90SmemOptin);
  } else {
    if (sm90::UseSmallM(p.m, p.n, p.k, c.batch)) return sm90::kSmallMVariant;
    sm90::ShapeQuery q;
    q.m = p.m, q.n = p.n, q.k = p.k, q.batch = c.batch, q.fp32_out = f32, q.b_kn = kn;
    cfg = sm90::ChooseConfig(q, sm_count, sm90::kSm90SmemOptin);
  }
  return sm90::TileVariant(cfg.block_m, cfg.block_n, cfg.swap_ab);
}

// A case (one problem, else a group of two) that the choice sends to tile variant `v` with this
// B layout and output dtype on `sm_count` SMs, searched over a grid of shapes.
std::optional<QualificationCase> FindSm90Case(int v, BLayout layout, DType out, int sm_count) {
  const std::string tag = std::string(layout == BLayout::kKN ? " kn" : " nk") +
                          (out == DType::kBF16 ? " bf16" : " fp32") + " (" + sm90::VariantName(v) +
                          ")";
  for (int64_t m : {32, 64, 96, 128, 192, 256, 512, 1024, 1536, 2048}) {
    for (int64_t n = 128; n <= 20480; n += 128) {
      QualificationCase c{std::to_string(m) + "x" + std::to_string(n) + "x1024" + tag,
                          {P(m, n, 1024, layout, out)}};
      if (Sm90VariantOf(c, sm_count) == v) return c;
    }
  }
  // The swap-AB widths: each holds a narrow band of M, with K of at least 4096 (SwapRule).
  for (int64_t m = 129; m <= 768; m += 16) {
    QualificationCase c{std::to_string(m) + "x1024x4096" + tag, {P(m, 1024, 4096, layout, out)}};
    if (Sm90VariantOf(c, sm_count) == v) return c;
  }
  for (int64_t m : {32, 64, 128}) {
    for (int64_t n = 128; n <= 20480; n += 128) {
      QualificationCase c{"group " + std::to_string(m) + "x" + std::to_string(n) + "x1024, " +
                              std::to_string(m / 2) + "x" + std::to_string(n) + "x512" + tag,
                          {P(m, n, 1024, layout, out), P(m / 2, n, 512, layout, out)}};
      if (Sm90VariantOf(c, sm_count) == v) return c;
    }
  }
  return std::nullopt;
}

// SM90: shapes the heuristics send to the tile variants, the small-M kernel and the tail
// split-K; then, for every tile variant the choice can reach on this device, a case in each B
// layout and output dtype not yet covered.
std::vector<QualificationCase> Sm90Cases(int sm_count) {
  using enum BLayout;
  const DType f32 = DType::kFP32;
  std::vector<QualificationCase> cases = {
      {"256x256x256 kn bf16", {P(256, 256, 256, kKN)}},
      {"16x4096x4096 nk bf16 (decode, small-M kernel)", {P(16, 4096, 4096, kNK)}},
      {"8x2048x1024 kn fp32 alpha=0.5 beta=1 (small-M kernel)",
       {P(8, 2048, 1024, kKN, f32, 0.5f, 1.0f)}},
      {"3x 12x1024x512 kn bf16 (small-M kernel, batched)", {P(12, 1024, 512, kKN)}, 3},
      {"48x4096x4096 kn bf16 (decode, WGMMA)", {P(48, 4096, 4096, kKN)}},
      {"1000x520x136 kn fp32 alpha=0.5 beta=1", {P(1000, 520, 136, kKN, f32, 0.5f, 1.0f)}},
      {"3x 320x1024x1024 nk bf16 (strided)", {P(320, 1024, 1024, kNK)}, 3},
      {"2048x2048x2048 kn bf16", {P(2048, 2048, 2048, kKN)}},
      {"128x4096x4096 nk bf16 (split-K tail)", {P(128, 4096, 4096, kNK)}},
      {"4096x4096x4096 nk bf16 (large)", {P(4096, 4096, 4096, kNK)}},
      {"4096x4096x4096 kn fp32 (large)", {P(4096, 4096, 4096, kKN, f32)}},
      {"group 128x256x512, 64x128x256, 300x200x104 nk bf16",
       {P(128, 256, 512, kNK), P(64, 128, 256, kNK), P(300, 200, 104, kNK)}},
  };
  for (QualificationCase& c : cases) c.variants = {Sm90VariantOf(c, sm_count)};
  // Every tile variant (plain and swap-AB): one case with B [K,N] in BF16 and one with B [N,K]
  // in FP32.
  for (int v = 0; v < sm90::kNumVariants; ++v) {
    if (v == sm90::kSmallMVariant) continue;
    for (const auto& [layout, out] : {std::pair{kKN, DType::kBF16}, std::pair{kNK, f32}}) {
      const bool covered = std::any_of(cases.begin(), cases.end(), [&](const auto& c) {
        return c.variants[0] == v && c.problems[0].b_layout == layout &&
               c.problems[0].d_dtype == out;
      });
      if (covered) continue;
      std::optional<QualificationCase> found = FindSm90Case(v, layout, out, sm_count);
      if (!found) continue;
      found->variants = {v};
      cases.push_back(*std::move(found));
    }
  }
  return cases;
}

}  // namespace

std::vector<std::string> NativeVariantNames(KernelKind kind) {
  std::vector<std::string> names;
  if (kind == KernelKind::kSm100) {
    for (int i = 0; i < sm100::kNumVariants; ++i) {
      names.push_back(sm100::VariantName(sm100::VariantAt(i)));
    }
  } else if (kind == KernelKind::kSm90) {
    for (int i = 0; i < sm90::kNumVariants; ++i) names.push_back(sm90::VariantName(i));
  }
  return names;
}

uint64_t AllVariants(KernelKind kind) {
  const size_t n = NativeVariantNames(kind).size();
  return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
}

std::vector<QualificationCase> QualificationCases(KernelKind kind, int sm_count) {
  if (kind == KernelKind::kSm100) return Sm100Cases(sm_count);
  if (kind == KernelKind::kSm90) return Sm90Cases(sm_count);
  return {{"256x256x256 kn bf16 (cublaslt vs float64)", {P(256, 256, 256, BLayout::kKN)}}};
}

}  // namespace gemm::kernel
