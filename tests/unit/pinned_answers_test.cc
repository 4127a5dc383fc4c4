// PinnedAnswers and AnswerBlock (server/gpu/pinned_answers.h) over a StagingPool of ordinary host
// memory: each answer returns exactly its own part of its unit's block, in any order, and the
// pool's used bytes go back to 0; the bound and a busy pool make TryTake() refuse at once; an
// answer released after everything else let go of the pool still returns its bytes to it. Runs
// without a GPU (needs the CUDA runtime library, so it is built where the CUDA backend is).
#include "server/gpu/pinned_answers.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "server/gpu/staging_pool.h"

namespace gemm::gpu {
namespace {

constexpr int64_t kAlign = StagingPool::kAlign;

std::shared_ptr<StagingPool> HostPool(int64_t total, int64_t slab) {
  auto pool = StagingPool::Create({.total_bytes = total, .slab_bytes = slab, .page_locked = false});
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? std::shared_ptr<StagingPool>(std::move(*pool)) : nullptr;
}

TEST(PinnedAnswersTest, EachAnswerReturnsItsOwnPartInAnyOrder) {
  auto pool = HostPool(1 << 20, 1 << 20);
  auto answers = PinnedAnswers::Create(pool, 1 << 20);
  AnswerBlock block = answers->TryTake(3 * kAlign + 100);  // rounded to 4 * kAlign
  ASSERT_TRUE(block.held());
  EXPECT_EQ(block.bytes(), 4 * kAlign);
  EXPECT_EQ(pool->used_bytes(), 4 * kAlign);
  EXPECT_EQ(answers->stats().held_bytes, 4 * kAlign);
  std::shared_ptr<const void> first = block.Cut(kAlign);
  std::shared_ptr<const void> second = block.Cut(3 * kAlign);
  std::shared_ptr<const void> last = block.Cut(block.bytes());
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_NE(last, nullptr);
  block = AnswerBlock();  // the unit completes: nothing left uncut
  EXPECT_EQ(pool->used_bytes(), 4 * kAlign);
  last.reset();
  EXPECT_EQ(pool->used_bytes(), 3 * kAlign);
  first.reset();
  EXPECT_EQ(pool->used_bytes(), 2 * kAlign);  // the slow reader's answer holds its own bytes
  EXPECT_EQ(answers->stats().held_bytes, 2 * kAlign);
  second.reset();
  EXPECT_EQ(pool->used_bytes(), 0);
  EXPECT_EQ(answers->stats().held_bytes, 0);
  // The freed parts merged back: the whole slab is one block again.
  absl::StatusOr<StagingBlock> whole = pool->TryAllocate(1 << 20);
  ASSERT_TRUE(whole.ok()) << whole.status();
  pool->Free(*whole);
}

TEST(PinnedAnswersTest, UncutBytesGoBackWithTheBlock) {
  auto pool = HostPool(1 << 20, 1 << 20);
  auto answers = PinnedAnswers::Create(pool, 1 << 20);
  {
    AnswerBlock block = answers->TryTake(8 * kAlign);
    ASSERT_TRUE(block.held());
    std::shared_ptr<const void> kept = block.Cut(2 * kAlign);
    EXPECT_EQ(pool->used_bytes(), 8 * kAlign);
    block = AnswerBlock();  // e.g. the unit failed after its first answer was cut
    EXPECT_EQ(pool->used_bytes(), 2 * kAlign);
  }
  EXPECT_EQ(pool->used_bytes(), 0);
  EXPECT_EQ(answers->stats().held_bytes, 0);
}

TEST(PinnedAnswersTest, CutsOutOfOrderOrOffAlignmentAreRefused) {
  auto pool = HostPool(1 << 20, 1 << 20);
  auto answers = PinnedAnswers::Create(pool, 1 << 20);
  AnswerBlock block = answers->TryTake(4 * kAlign);
  ASSERT_TRUE(block.held());
  EXPECT_EQ(block.Cut(0), nullptr);
  EXPECT_EQ(block.Cut(kAlign + 1), nullptr);
  EXPECT_EQ(block.Cut(5 * kAlign), nullptr);
  std::shared_ptr<const void> a = block.Cut(2 * kAlign);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(block.Cut(kAlign), nullptr);
  EXPECT_EQ(block.Cut(2 * kAlign), nullptr);
  AnswerBlock empty;
  EXPECT_EQ(empty.Cut(kAlign), nullptr);
  block = AnswerBlock();
  a.reset();
  EXPECT_EQ(pool->used_bytes(), 0);
}

TEST(PinnedAnswersTest, TheBoundRefusesAtOnceAndCountsWhatTheBlockHolds) {
  auto pool = HostPool(1 << 20, 1 << 20);
  auto answers = PinnedAnswers::Create(pool, 4 * kAlign);
  AnswerBlock a = answers->TryTake(3 * kAlign + 1);  // 4 * kAlign with the pool's rounding
  ASSERT_TRUE(a.held());
  EXPECT_FALSE(answers->TryTake(1).held());
  a = AnswerBlock();
  EXPECT_TRUE(answers->TryTake(4 * kAlign).held());
  EXPECT_FALSE(answers->TryTake(4 * kAlign + 1).held());
  EXPECT_FALSE(answers->TryTake(0).held());
  EXPECT_EQ(pool->used_bytes(), 0);

  auto none = PinnedAnswers::Create(pool, 0);  // --pinned_answer_fraction=0: always copied
  EXPECT_FALSE(none->TryTake(kAlign).held());
}

TEST(PinnedAnswersTest, ABusyPoolRefusesAtOnceAndTheBoundIsGivenBack) {
  auto pool = HostPool(1 << 20, 1 << 20);
  auto answers = PinnedAnswers::Create(pool, 1 << 20);
  absl::StatusOr<StagingBlock> units = pool->Allocate((1 << 20) - kAlign);  // units in flight
  ASSERT_TRUE(units.ok()) << units.status();
  EXPECT_FALSE(answers->TryTake(2 * kAlign).held());  // does not wait
  EXPECT_EQ(answers->stats().held_bytes, 0);
  EXPECT_TRUE(answers->TryTake(kAlign).held());
  pool->Free(*units);
  EXPECT_EQ(pool->used_bytes(), 0);
}

TEST(PinnedAnswersTest, AnAnswerReleasedLastStillReturnsItsBytesToALivePool) {
  auto pool = HostPool(1 << 20, 1 << 20);
  std::weak_ptr<StagingPool> watch = pool;
  auto answers = PinnedAnswers::Create(pool, 1 << 20);
  AnswerBlock block = answers->TryTake(2 * kAlign);
  ASSERT_TRUE(block.held());
  std::shared_ptr<const void> late = block.Cut(block.bytes());
  // The backend goes away (its executors, its pool and answer owners) before gRPC releases the
  // answer.
  block = AnswerBlock();
  answers.reset();
  const StagingPool* raw = pool.get();
  pool.reset();
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(raw->used_bytes(), 2 * kAlign);
  late.reset();
  EXPECT_TRUE(watch.expired());  // freed with the last answer, every block returned
}

}  // namespace
}  // namespace gemm::gpu
