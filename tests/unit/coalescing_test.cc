// Which requests coalesce (core::CoalescingKeyOf): the one rule the batcher gathers batches by
// and the CUDA executor groups a batch's items into units by.
#include "server/core/coalescing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <vector>

namespace gemm::core {
namespace {

class TestMatrix : public ResidentMatrix {
 public:
  TestMatrix() : ResidentMatrix(Desc{.handle = "m", .rows = 64, .cols = 64, .devices = {-1}}) {}
};

class CoalescingTest : public ::testing::Test {
 protected:
  // A single GEMM of M=8 against `matrix`.
  GemmRequest Single(std::shared_ptr<const ResidentMatrix> matrix) const {
    GemmRequest r;
    r.kind = WorkKind::kSingle;
    Problem p;
    p.m = 8;
    p.n = 64;
    p.k = 64;
    p.b_resident = std::move(matrix);
    r.problems.push_back(std::move(p));
    return r;
  }
  // An expert group: one problem per matrix.
  GemmRequest Experts(const std::vector<std::shared_ptr<const ResidentMatrix>>& matrices) const {
    GemmRequest r;
    r.kind = WorkKind::kGroup;
    for (const auto& m : matrices) r.problems.push_back(Single(m).problems[0]);
    return r;
  }

  std::shared_ptr<const ResidentMatrix> w1_ = std::make_shared<TestMatrix>();
  std::shared_ptr<const ResidentMatrix> w2_ = std::make_shared<TestMatrix>();
};

TEST_F(CoalescingTest, SinglesOnOneResidentMatrixShareAKey) {
  std::optional<CoalescingKey> a = CoalescingKeyOf(Single(w1_));
  std::optional<CoalescingKey> b = CoalescingKeyOf(Single(w1_));
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*a, *b);
  EXPECT_FALSE(a->experts);
  EXPECT_NE(*a, *CoalescingKeyOf(Single(w2_)));
}

TEST_F(CoalescingTest, SinglesDifferingInWhatTheKernelComputesDoNotShareAKey) {
  const CoalescingKey base = *CoalescingKeyOf(Single(w1_));
  GemmRequest r = Single(w1_);
  r.problems[0].alpha = 2.0f;
  EXPECT_NE(*CoalescingKeyOf(r), base);
  r = Single(w1_);
  r.problems[0].beta = 1.0f;
  r.problems[0].c = "cccc";
  EXPECT_NE(*CoalescingKeyOf(r), base);
  r = Single(w1_);
  r.problems[0].b_layout = BLayout::kNK;
  EXPECT_NE(*CoalescingKeyOf(r), base);
  r = Single(w1_);
  r.problems[0].out_dtype = DType::kFP32;
  EXPECT_NE(*CoalescingKeyOf(r), base);
  r = Single(w1_);
  r.kernel = "cublaslt";
  EXPECT_NE(*CoalescingKeyOf(r), base);
}

TEST_F(CoalescingTest, NanAlphaComparesByBitPattern) {
  GemmRequest r = Single(w1_);
  r.problems[0].alpha = std::nanf("");
  EXPECT_EQ(*CoalescingKeyOf(r), *CoalescingKeyOf(r));
}

TEST_F(CoalescingTest, RequestsThatCannotStackRunAlone) {
  GemmRequest inline_b = Single(nullptr);
  inline_b.problems[0].b = "bbbb";
  EXPECT_FALSE(CoalescingKeyOf(inline_b).has_value());

  GemmRequest both = Single(w1_);  // a resident B with inline bytes as well
  both.problems[0].b = "bbbb";
  EXPECT_FALSE(CoalescingKeyOf(both).has_value());

  GemmRequest counted = Single(w1_);
  counted.problems[0].count = 2;
  EXPECT_FALSE(CoalescingKeyOf(counted).has_value());

  GemmRequest batch = Single(w1_);
  batch.kind = WorkKind::kBatch;
  EXPECT_FALSE(CoalescingKeyOf(batch).has_value());

  GemmRequest group_with_inline = Experts({w1_, w2_});
  group_with_inline.problems[1].b_resident = nullptr;
  group_with_inline.problems[1].b = "bbbb";
  EXPECT_FALSE(CoalescingKeyOf(group_with_inline).has_value());

  EXPECT_FALSE(CoalescingKeyOf(GemmRequest{}).has_value());
}

TEST_F(CoalescingTest, ExpertGroupsShareAKeyWhateverMatricesTheyName) {
  std::optional<CoalescingKey> a = CoalescingKeyOf(Experts({w1_, w2_}));
  std::optional<CoalescingKey> b = CoalescingKeyOf(Experts({w2_}));
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(a->experts);
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *CoalescingKeyOf(Single(w1_)));  // never with a single GEMM

  GemmRequest other_kernel = Experts({w1_});
  other_kernel.kernel = "cublaslt";
  EXPECT_NE(*CoalescingKeyOf(other_kernel), *a);
}

}  // namespace
}  // namespace gemm::core
