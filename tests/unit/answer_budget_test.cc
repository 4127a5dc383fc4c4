// AnswerBudget: when a stream may read its next message, and AnswerBytes: the output bytes a
// request's answer holds, saturating for sizes validation refuses.
#include "server/grpc/answer_budget.h"

#include <gtest/gtest.h>

namespace gemm::service {
namespace {

TEST(AnswerBudgetTest, StreamReadsWhileUnderItsCapAndTheServerCap) {
  AnswerBudget budget({.per_stream_bytes = 100, .server_bytes = 150});
  EXPECT_TRUE(budget.MayRead(0));
  EXPECT_TRUE(budget.MayRead(99));
  EXPECT_FALSE(budget.MayRead(100));
  budget.Take(150);
  EXPECT_FALSE(budget.MayRead(1)) << "the server holds its cap";
  EXPECT_TRUE(budget.MayRead(0)) << "a stream that holds nothing always reads";
  budget.Give(100);
  EXPECT_TRUE(budget.MayRead(1));
  EXPECT_EQ(budget.held(), 50);
}

TEST(AnswerBudgetTest, ResolveChecksTheCapsAndDerivesTheServerCap) {
  EXPECT_EQ(AnswerBudget::Resolve({.per_stream_bytes = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AnswerBudget::Resolve({.server_bytes = -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AnswerBudget::Resolve({.server_bytes = int64_t{1} << 62}).status().code(),
            absl::StatusCode::kInvalidArgument)
      << "more than the host holds";
  auto derived = AnswerBudget::Resolve({.server_bytes = 0});
  ASSERT_TRUE(derived.ok()) << derived.status();
  EXPECT_EQ(derived->server_bytes, AnswerBudget::DefaultServerBytes());
  EXPECT_GT(derived->server_bytes, 0);
  auto given = AnswerBudget::Resolve({.per_stream_bytes = 7, .server_bytes = 9});
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->per_stream_bytes, 7);
  EXPECT_EQ(given->server_bytes, 9);
}

core::Problem Problem(int64_t count, int64_t m, int64_t n, core::DType out) {
  core::Problem p;
  p.count = count;
  p.m = m;
  p.n = n;
  p.out_dtype = out;
  return p;
}

TEST(AnswerBytesTest, SumsTheOutputsThatTravelInTheAnswer) {
  core::GemmRequest r;
  r.problems.push_back(Problem(2, 3, 5, core::DType::kFP32));  // 120
  r.problems.push_back(Problem(1, 7, 1, core::DType::kBF16));  // 14
  char shared[64];
  r.problems.push_back(Problem(1, 4, 4, core::DType::kFP32));
  r.problems.back().d_dest = absl::Span<char>(shared, sizeof(shared));  // not in the answer
  EXPECT_EQ(AnswerBytes(r), 134);
}

TEST(AnswerBytesTest, SaturatesForSizesThatOverflow) {
  core::GemmRequest r;
  r.problems.push_back(Problem(1, int64_t{1} << 40, int64_t{1} << 40, core::DType::kFP32));
  EXPECT_EQ(AnswerBytes(r), kMaxAnswerBytes);
  r.problems.push_back(Problem(1, int64_t{1} << 48, 2, core::DType::kBF16));
  EXPECT_EQ(AnswerBytes(r), kMaxAnswerBytes);
  r.problems.assign(1, Problem(-1, 4, 4, core::DType::kBF16));
  EXPECT_EQ(AnswerBytes(r), kMaxAnswerBytes);
}

}  // namespace
}  // namespace gemm::service
