// The qualification case list (gemm/qualification.h). The SM100 cases are chosen so that the
// launcher's own choice (sm100_choice.h) lands on each of the 12 compiled variants; each case
// records the variants that choice predicts, and the runner lets the call use only those.
#include "gemm/qualification.h"

#include "sm100/sm100_choice.h"
#include "sm100/sm100_split.h"
#include "sm100/sm100_variant.h"

namespace gemm::kernel {
namespace {

QualificationProblem P(int64_t m, int64_t n, int64_t k, BLayout layout,
                       DType out = DType::kBF16, float alpha = 1.0f, float beta = 0.0f) {
  return {m, n, k, layout, out, alpha, beta};
}

// The SM100 variant a case runs, as the launcher will choose it.
int Sm100VariantOf(const QualificationCase& c, int sm_count) {
  const QualificationProblem& p = c.problems[0];
  if (c.problems.size() > 1) {  // grouped: the wide kernel, one M-wave
    return sm100::VariantIndex(
        sm100::KeyOf(p.b_layout == BLayout::kKN, p.d_dtype == DType::kFP32, false));
  }
  sm100::BatchQuery q{.m = p.m, .n = p.n, .k = p.k, .batch = c.batch,
                      .b_kn = p.b_layout == BLayout::kKN, .out_f32 = p.d_dtype == DType::kFP32,
                      .alpha = p.alpha, .beta = p.beta, .resident_clusters = sm_count / 2,
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
       {P(100, 512, 256, kKN, DType::kBF16, 0.5f, 1.0f)}, 2},
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
       {P(1536, 768, 1024, kNK, f32, 1.0f, 1.0f)}, 1, false, 2},
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
       {P(128, 256, 512, kNK), P(300, 200, 104, kNK)}, 1, true},
  };
  for (QualificationCase& c : cases) c.variants = {Sm100VariantOf(c, sm_count)};
  return cases;
}

// The SM90 family qualifies as one variant (index 0) over the shapes its heuristics split into
// its tile configurations, the small-M kernel and the tail split-K.
std::vector<QualificationCase> Sm90Cases() {
  using enum BLayout;
  const DType f32 = DType::kFP32;
  std::vector<QualificationCase> cases = {
      {"256x256x256 kn bf16", {P(256, 256, 256, kKN)}},
      {"16x4096x4096 nk bf16 (decode, small-M kernel)", {P(16, 4096, 4096, kNK)}},
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
  for (QualificationCase& c : cases) c.variants = {0};
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
    names.push_back("sm90.wgmma_family");
  }
  return names;
}

uint64_t AllVariants(KernelKind kind) {
  const size_t n = NativeVariantNames(kind).size();
  return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
}

std::vector<QualificationCase> QualificationCases(KernelKind kind, int sm_count) {
  if (kind == KernelKind::kSm100) return Sm100Cases(sm_count);
  if (kind == KernelKind::kSm90) return Sm90Cases();
  return {{"256x256x256 kn bf16 (cublaslt vs float64)", {P(256, 256, 256, BLayout::kKN)}}};
}

}  // namespace gemm::kernel
