// PinnedAnswers and AnswerBlock (see pinned_answers.h).
#include "server/gpu/pinned_answers.h"

#include <utility>

namespace gemm::gpu {

// One answer's bytes: returned to the pool and the bound when the last reference drops.
struct PinnedAnswers::Part {
  std::shared_ptr<PinnedAnswers> owner;
  StagingBlock bytes;
  Part(std::shared_ptr<PinnedAnswers> o, StagingBlock b) : owner(std::move(o)), bytes(b) {}
  Part(const Part&) = delete;
  Part& operator=(const Part&) = delete;
  ~Part() { owner->Return(bytes); }
};

std::shared_ptr<PinnedAnswers> PinnedAnswers::Create(std::shared_ptr<StagingPool> pool,
                                                     int64_t max_bytes) {
  return std::shared_ptr<PinnedAnswers>(new PinnedAnswers(std::move(pool), max_bytes));
}

AnswerBlock PinnedAnswers::TryTake(int64_t bytes) {
  if (bytes <= 0 || bytes > pool_->max_block_bytes()) return {};
  // The pool rounds blocks up to its alignment: the bound counts what the block really holds.
  const int64_t rounded =
      (bytes + StagingPool::kAlign - 1) / StagingPool::kAlign * StagingPool::kAlign;
  if (!limit_.TryTake(rounded)) return {};
  absl::StatusOr<StagingBlock> block = pool_->TryAllocate(rounded);
  if (!block.ok()) {
    limit_.Give(rounded);
    return {};
  }
  return AnswerBlock(shared_from_this(), *block);
}

void PinnedAnswers::Return(const StagingBlock& part) {
  pool_->Free(part);
  limit_.Give(part.bytes);
}

AnswerBlock& AnswerBlock::operator=(AnswerBlock&& other) noexcept {
  if (this != &other) {
    Reset();
    owner_ = std::move(other.owner_);
    block_ = std::exchange(other.block_, StagingBlock{});
    cut_ = std::exchange(other.cut_, 0);
  }
  return *this;
}

std::shared_ptr<const void> AnswerBlock::Cut(int64_t end) {
  if (owner_ == nullptr || end <= cut_ || end > block_.bytes ||
      (end != block_.bytes && end % StagingPool::kAlign != 0)) {
    return nullptr;
  }
  auto part = std::make_shared<const PinnedAnswers::Part>(
      owner_, StagingPool::Part(block_, cut_, end - cut_));
  cut_ = end;
  return part;
}

void AnswerBlock::Reset() {
  if (owner_ != nullptr && cut_ < block_.bytes) {
    owner_->Return(StagingPool::Part(block_, cut_, block_.bytes - cut_));
  }
  owner_.reset();
  block_ = {};
  cut_ = 0;
}

}  // namespace gemm::gpu
