// The bound on pinned staging bytes that inline answers hold while they wait to be sent, and the
// count of answers sent from pinned memory or copied out of it. Plain host code (no CUDA): the
// executors ask it before taking an answer block (server/gpu/pinned_answers.h), and the answers
// give their bytes back when gRPC releases them.
#pragma once

#include <atomic>
#include <cstdint>

namespace gemm::gpu {

class PinnedAnswerLimit {
 public:
  // At most `max_bytes` held at once (< 0 counts as 0: every answer is copied).
  explicit PinnedAnswerLimit(int64_t max_bytes) : max_bytes_(max_bytes < 0 ? 0 : max_bytes) {}

  // `fraction` (clamped to [0, 1]; NaN counts as 0) of `pool_bytes` (< 0 counts as 0), rounded
  // down: the bound for a pool of that size.
  static int64_t MaxBytesOf(double fraction, int64_t pool_bytes);

  // Takes `bytes` (>= 0) if the bytes held then stay within the bound, else takes nothing and
  // returns false. Lock-free, thread-safe.
  bool TryTake(int64_t bytes);
  // Gives back `bytes` taken by TryTake (in one piece or several). Lock-free, thread-safe.
  void Give(int64_t bytes);

  // Counts `pinned` answers sent from pinned memory and `copied` answers copied out of staging
  // (the bound or the pool had no room when their unit started). Thread-safe.
  void CountAnswers(int64_t pinned, int64_t copied);

  struct Stats {
    int64_t held_bytes = 0;      // taken and not given back
    int64_t max_bytes = 0;       // the bound
    int64_t pinned_answers = 0;  // answers sent from pinned memory, since creation
    int64_t copied_answers = 0;  // answers copied out of staging, since creation
  };
  // The numbers now (each read on its own: a snapshot only when nothing runs). Thread-safe.
  Stats stats() const;

 private:
  const int64_t max_bytes_;
  std::atomic<int64_t> held_{0};
  std::atomic<int64_t> pinned_{0};
  std::atomic<int64_t> copied_{0};
};

}  // namespace gemm::gpu
