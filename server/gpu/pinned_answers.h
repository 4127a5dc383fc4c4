// Inline answers sent from pinned memory: a unit's inline results (the answer region of its plan)
// are copied from the GPU into a staging block of their own, and each answer is sent from its
// part of that block, which goes back to the pool when gRPC releases the answer. The unit's own
// staging (its operands) is returned when the unit completes, so an answer a client is slow to
// read holds its own bytes only. The bytes answers hold are bounded (PinnedAnswerLimit); beyond
// the bound, or when the pool has no free block at once, the unit's answers are copied out of its
// staging instead.
//
// Lifetime: every answer part holds a shared_ptr to its PinnedAnswers, which holds the pool, so
// an answer gRPC releases late (during shutdown, after the backend and its executors are gone)
// still returns its bytes to a live pool; the pool's slabs are freed with the last owner.
#pragma once

#include <cstdint>
#include <memory>

#include "server/gpu/pinned_answer_limit.h"
#include "server/gpu/staging_pool.h"

namespace gemm::gpu {

class AnswerBlock;

class PinnedAnswers : public std::enable_shared_from_this<PinnedAnswers> {
 public:
  // Answer blocks from `pool`, at most `max_bytes` held by answers at once.
  static std::shared_ptr<PinnedAnswers> Create(std::shared_ptr<StagingPool> pool,
                                               int64_t max_bytes);

  PinnedAnswers(const PinnedAnswers&) = delete;
  PinnedAnswers& operator=(const PinnedAnswers&) = delete;

  // A block for answers of `bytes` in all, or an empty one when that would take the answers past
  // the bound or the pool has no free block now. Never waits. Thread-safe.
  AnswerBlock TryTake(int64_t bytes);

  // Counts answers sent from pinned memory and answers copied (see PinnedAnswerLimit).
  void CountAnswers(int64_t pinned, int64_t copied) { limit_.CountAnswers(pinned, copied); }
  // Bytes held by answers, the bound and the answer counts.
  PinnedAnswerLimit::Stats stats() const { return limit_.stats(); }
  // The pool the blocks come from.
  const StagingPool& pool() const { return *pool_; }

 private:
  friend class AnswerBlock;
  struct Part;  // one answer's bytes (pinned_answers.cc)
  PinnedAnswers(std::shared_ptr<StagingPool> pool, int64_t max_bytes)
      : pool_(std::move(pool)), limit_(max_bytes) {}
  // Returns `part` of an answer block to the pool and its bytes to the bound.
  void Return(const StagingBlock& part);

  const std::shared_ptr<StagingPool> pool_;
  PinnedAnswerLimit limit_;
};

// One unit's answer block, cut into one owner per answer. Move-only; the bytes not cut off yet go
// back when it is destroyed.
class AnswerBlock {
 public:
  AnswerBlock() = default;
  AnswerBlock(AnswerBlock&& other) noexcept { *this = std::move(other); }
  AnswerBlock& operator=(AnswerBlock&& other) noexcept;
  ~AnswerBlock() { Reset(); }

  // Whether it holds a block.
  bool held() const { return block_.ptr != nullptr; }
  // Base address (null when empty).
  char* ptr() const { return block_.ptr; }
  // The block's size (a multiple of StagingPool::kAlign; 0 when empty).
  int64_t bytes() const { return block_.bytes; }

  // The owner of the bytes from the previous cut (the start at first) up to `end`: a multiple of
  // StagingPool::kAlign greater than the previous cut, or bytes() for the last part. Dropping
  // the last copy of the owner returns those bytes (from any thread, also after this block and
  // the executors are gone). Null when `end` is out of order or past the block.
  std::shared_ptr<const void> Cut(int64_t end);

 private:
  friend class PinnedAnswers;
  AnswerBlock(std::shared_ptr<PinnedAnswers> owner, StagingBlock block)
      : owner_(std::move(owner)), block_(block) {}
  void Reset();

  std::shared_ptr<PinnedAnswers> owner_;
  StagingBlock block_;
  int64_t cut_ = 0;  // bytes already handed to answer owners
};

}  // namespace gemm::gpu
