// AnswerBatch: calls deferred while a batch is open on the thread run once, in order, when the
// outermost batch closes; without a batch nothing is deferred.
#include "server/core/answer_batch.h"

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gemm::core {
namespace {

TEST(AnswerBatchTest, WithoutABatchNothingIsDeferred) {
  bool ran = false;
  EXPECT_FALSE(AnswerBatch::Defer([&] { ran = true; }));
  EXPECT_FALSE(ran);
}

TEST(AnswerBatchTest, DeferredCallsRunInOrderWhenTheBatchCloses) {
  std::vector<int> order;
  {
    AnswerBatch batch;
    EXPECT_TRUE(AnswerBatch::Defer([&] { order.push_back(1); }));
    EXPECT_TRUE(AnswerBatch::Defer([&] { order.push_back(2); }));
    EXPECT_TRUE(order.empty());
  }
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  // The batch is over: nothing is deferred any more, and nothing runs twice.
  EXPECT_FALSE(AnswerBatch::Defer([&] { order.push_back(3); }));
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(AnswerBatchTest, InnerBatchesJoinTheOutermost) {
  std::vector<int> order;
  {
    AnswerBatch outer;
    {
      AnswerBatch inner;
      AnswerBatch::Defer([&] { order.push_back(1); });
    }
    EXPECT_TRUE(order.empty());  // the inner close runs nothing
    AnswerBatch::Defer([&] { order.push_back(2); });
  }
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(AnswerBatchTest, CallsDeferredByADeferredCallRunBeforeTheCloseReturns) {
  std::vector<int> order;
  {
    AnswerBatch batch;
    AnswerBatch::Defer([&] {
      order.push_back(1);
      EXPECT_TRUE(AnswerBatch::Defer([&] { order.push_back(2); }));
    });
  }
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(AnswerBatchTest, BatchesArePerThread) {
  AnswerBatch batch;
  bool deferred_elsewhere = true;
  std::thread other([&] { deferred_elsewhere = AnswerBatch::Defer([] {}); });
  other.join();
  EXPECT_FALSE(deferred_elsewhere);
}

}  // namespace
}  // namespace gemm::core
