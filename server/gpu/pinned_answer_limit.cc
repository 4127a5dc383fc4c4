// PinnedAnswerLimit: a lock-free byte bound and two counters (see pinned_answer_limit.h).
#include "server/gpu/pinned_answer_limit.h"

#include <cmath>

namespace gemm::gpu {

int64_t PinnedAnswerLimit::MaxBytesOf(double fraction, int64_t pool_bytes) {
  if (!(fraction > 0) || pool_bytes <= 0) return 0;  // also NaN
  if (fraction >= 1) return pool_bytes;
  // fraction * pool_bytes < pool_bytes: fits in int64_t (a double rounds the product, never past
  // pool_bytes).
  const double bytes = std::floor(fraction * static_cast<double>(pool_bytes));
  return bytes >= static_cast<double>(pool_bytes) ? pool_bytes : static_cast<int64_t>(bytes);
}

bool PinnedAnswerLimit::TryTake(int64_t bytes) {
  if (bytes < 0) return false;
  int64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (bytes > max_bytes_ - held) return false;  // held <= max_bytes_: no overflow
  } while (!held_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  return true;
}

void PinnedAnswerLimit::Give(int64_t bytes) { held_.fetch_sub(bytes, std::memory_order_relaxed); }

void PinnedAnswerLimit::CountAnswers(int64_t pinned, int64_t copied) {
  if (pinned > 0) pinned_.fetch_add(pinned, std::memory_order_relaxed);
  if (copied > 0) copied_.fetch_add(copied, std::memory_order_relaxed);
}

PinnedAnswerLimit::Stats PinnedAnswerLimit::stats() const {
  return {.held_bytes = held_.load(std::memory_order_relaxed),
          .max_bytes = max_bytes_,
          .pinned_answers = pinned_.load(std::memory_order_relaxed),
          .copied_answers = copied_.load(std::memory_order_relaxed)};
}

}  // namespace gemm::gpu
