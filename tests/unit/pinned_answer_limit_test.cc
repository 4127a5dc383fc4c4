// PinnedAnswerLimit (server/gpu/pinned_answer_limit.h): the bound on pinned bytes inline answers
// hold is never passed, also by many threads at once, is given back exactly, and the bound of a
// pool share is overflow-safe. Plain host code: runs without a GPU.
#include "server/gpu/pinned_answer_limit.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace gemm::gpu {
namespace {

TEST(PinnedAnswerLimitTest, TakesUpToTheBoundAndNoMore) {
  PinnedAnswerLimit limit(1000);
  EXPECT_TRUE(limit.TryTake(600));
  EXPECT_FALSE(limit.TryTake(401));  // would hold 1001
  EXPECT_EQ(limit.stats().held_bytes, 600);
  EXPECT_TRUE(limit.TryTake(400));  // exactly the bound
  EXPECT_FALSE(limit.TryTake(1));
  limit.Give(250);
  limit.Give(750);
  EXPECT_EQ(limit.stats().held_bytes, 0);
  EXPECT_TRUE(limit.TryTake(1000));
}

TEST(PinnedAnswerLimitTest, ZeroOrNegativeBoundTakesNothing) {
  PinnedAnswerLimit zero(0);
  EXPECT_FALSE(zero.TryTake(1));
  EXPECT_TRUE(zero.TryTake(0));
  PinnedAnswerLimit negative(-5);
  EXPECT_EQ(negative.stats().max_bytes, 0);
  EXPECT_FALSE(negative.TryTake(1));
  EXPECT_FALSE(negative.TryTake(-1));  // a negative take is refused, not an increase of room
}

TEST(PinnedAnswerLimitTest, HugeTakesDoNotOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  PinnedAnswerLimit limit(kMax);
  EXPECT_TRUE(limit.TryTake(kMax - 10));
  EXPECT_FALSE(limit.TryTake(11));
  EXPECT_FALSE(limit.TryTake(kMax));
  EXPECT_TRUE(limit.TryTake(10));
  EXPECT_EQ(limit.stats().held_bytes, kMax);
}

TEST(PinnedAnswerLimitTest, ManyThreadsNeverPassTheBound) {
  constexpr int64_t kBound = 64 * 256;
  PinnedAnswerLimit limit(kBound);
  std::vector<std::thread> threads;
  std::atomic<bool> over{false};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        if (!limit.TryTake(256)) continue;
        if (limit.stats().held_bytes > kBound) over = true;
        limit.Give(256);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(over.load());
  EXPECT_EQ(limit.stats().held_bytes, 0);
}

TEST(PinnedAnswerLimitTest, CountsAnswersByWhereTheyWereSentFrom) {
  PinnedAnswerLimit limit(10);
  limit.CountAnswers(3, 0);
  limit.CountAnswers(0, 2);
  limit.CountAnswers(1, 1);
  EXPECT_EQ(limit.stats().pinned_answers, 4);
  EXPECT_EQ(limit.stats().copied_answers, 3);
}

TEST(PinnedAnswerLimitTest, BoundOfAPoolShare) {
  EXPECT_EQ(PinnedAnswerLimit::MaxBytesOf(0.25, 1 << 20), 1 << 18);
  EXPECT_EQ(PinnedAnswerLimit::MaxBytesOf(0, 1 << 20), 0);
  EXPECT_EQ(PinnedAnswerLimit::MaxBytesOf(-1, 1 << 20), 0);
  EXPECT_EQ(PinnedAnswerLimit::MaxBytesOf(std::nan(""), 1 << 20), 0);
  EXPECT_EQ(PinnedAnswerLimit::MaxBytesOf(1, 1 << 20), 1 << 20);
  EXPECT_EQ(PinnedAnswerLimit::MaxBytesOf(7, 1 << 20), 1 << 20);
  EXPECT_EQ(PinnedAnswerLimit::MaxBytesOf(0.5, -4), 0);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_LE(PinnedAnswerLimit::MaxBytesOf(0.999999999999, kMax), kMax);
  EXPECT_GT(PinnedAnswerLimit::MaxBytesOf(0.5, kMax), 0);
}

}  // namespace
}  // namespace gemm::gpu
