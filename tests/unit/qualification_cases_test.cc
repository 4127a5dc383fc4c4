// Tests of the qualification case list (kernel/include/gemm/qualification.h): on SM100 devices
// of several sizes (GB200's 148 SMs among them) the launcher's own choice lands on every one of
// the 12 compiled variants, and the list covers both layouts, both output dtypes, beta, grouped,
// batched, split-K and Cluster Launch Control on and off; on SM90 devices every tile variant runs
// in both layouts and both output dtypes, and the small-M kernel runs.
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gemm/qualification.h"
#include "gtest/gtest.h"

namespace gemm::kernel {
namespace {

TEST(QualificationCasesTest, Sm100CasesRunEveryCompiledVariant) {
  ASSERT_EQ(NativeVariantNames(KernelKind::kSm100).size(), 12u);
  EXPECT_EQ(AllVariants(KernelKind::kSm100), 0xFFFu);
  for (int sms : {148, 132, 160, 20}) {
    SCOPED_TRACE(sms);
    std::set<int> seen, seen_clc;
    for (const QualificationCase& c : QualificationCases(KernelKind::kSm100, sms)) {
      ASSERT_EQ(c.variants.size(), 1u) << c.name;
      seen.insert(c.variants[0]);
      if (c.clc) seen_clc.insert(c.variants[0]);
    }
    EXPECT_EQ(seen.size(), 12u);
    // CLC on reaches each kernel (swap-AB, wide, wide with 2 M-waves).
    std::set<int> kernels;
    for (int v : seen_clc) kernels.insert(v / 4);
    EXPECT_EQ(kernels.size(), 3u);
  }
}

TEST(QualificationCasesTest, Sm100CasesCoverTheFeatureMatrix) {
  bool kn = false, nk = false, bf16 = false, f32 = false, beta = false, grouped = false,
       batched = false, clc_on = false, clc_off = false, beta_small_m_bf16 = false;
  for (const QualificationCase& c : QualificationCases(KernelKind::kSm100, 148)) {
    for (const QualificationProblem& p : c.problems) {
      (p.b_layout == BLayout::kKN ? kn : nk) = true;
      (p.d_dtype == DType::kBF16 ? bf16 : f32) = true;
      if (p.beta != 0.0f) beta = true;
      if (p.beta != 0.0f && p.m <= 128 && p.d_dtype == DType::kBF16 && c.batch > 1) {
        beta_small_m_bf16 = true;  // in-kernel beta of the small-M BF16 epilogue
      }
    }
    grouped |= c.problems.size() > 1;
    batched |= c.batch > 1;
    (c.clc ? clc_on : clc_off) = true;
  }
  EXPECT_TRUE(kn && nk && bf16 && f32 && beta && grouped && batched && clc_on && clc_off &&
              beta_small_m_bf16);
}

TEST(QualificationCasesTest, Sm90CasesRunEveryCompiledVariantInBothLayoutsAndDtypes) {
  const std::vector<std::string> names = NativeVariantNames(KernelKind::kSm90);
  // Five WGMMA tiles, the small-M kernel and 7 swap-AB widths.
  ASSERT_EQ(names.size(), 13u);
  EXPECT_EQ(names[5], "sm90.small_m");
  EXPECT_EQ(names[6], "sm90.wgmma_swap_128x144");
  EXPECT_EQ(names.back(), "sm90.wgmma_swap_128x240");
  EXPECT_EQ(AllVariants(KernelKind::kSm90), (1u << 13) - 1);
  for (int sms : {132, 114}) {  // H100/H200 SXM, H100 PCIe
    SCOPED_TRACE(sms);
    std::set<int> seen;
    std::set<std::tuple<int, BLayout, DType>> combos;
    bool grouped = false, batched = false, beta = false;
    for (const QualificationCase& c : QualificationCases(KernelKind::kSm90, sms)) {
      ASSERT_EQ(c.variants.size(), 1u) << c.name;
      ASSERT_GE(c.variants[0], 0) << c.name;
      seen.insert(c.variants[0]);
      const QualificationProblem& p = c.problems[0];
      combos.insert({c.variants[0], p.b_layout, p.d_dtype});
      grouped |= c.problems.size() > 1;
      batched |= c.batch > 1;
      beta |= p.beta != 0.0f;
    }
    EXPECT_EQ(seen.size(), 13u);
    for (int v = 0; v < 5; ++v) {
      EXPECT_TRUE(combos.contains({v, BLayout::kKN, DType::kBF16})) << names[v];
      EXPECT_TRUE(combos.contains({v, BLayout::kNK, DType::kFP32})) << names[v];
    }
    for (int v = 6; v < 13; ++v) {  // swap-AB
      EXPECT_TRUE(combos.contains({v, BLayout::kKN, DType::kBF16})) << names[v];
      EXPECT_TRUE(combos.contains({v, BLayout::kNK, DType::kFP32})) << names[v];
    }
    EXPECT_TRUE(grouped && batched && beta);
  }
}

TEST(QualificationCasesTest, CublasLtHasOneCaseAndNoVariants) {
  EXPECT_TRUE(NativeVariantNames(KernelKind::kCublasLt).empty());
  EXPECT_EQ(AllVariants(KernelKind::kCublasLt), 0u);
  EXPECT_EQ(QualificationCases(KernelKind::kCublasLt, 0).size(), 1u);
}

}  // namespace
}  // namespace gemm::kernel
