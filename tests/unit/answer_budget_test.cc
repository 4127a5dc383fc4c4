// AnswerBudget: when a stream may read its next message, and how its caps are resolved.
#include "server/grpc/answer_budget.h"

#include <gtest/gtest.h>

#include "server/core/usable_memory.h"

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
  // At most half the host's memory: the in-flight budget may take the other half.
  if (core::DetectUsableMemory().bytes > 0) {
    const int64_t half = 2 * AnswerBudget::DefaultServerBytes();
    EXPECT_TRUE(AnswerBudget::Resolve({.server_bytes = half}).ok());
    EXPECT_EQ(AnswerBudget::Resolve({.server_bytes = half + 8}).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  auto given = AnswerBudget::Resolve({.per_stream_bytes = 7, .server_bytes = 9});
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->per_stream_bytes, 7);
  EXPECT_EQ(given->server_bytes, 9);
}

}  // namespace
}  // namespace gemm::service
