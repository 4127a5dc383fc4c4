// FakeClock: a Clock for tests whose time only moves when the test calls Advance(). Threads
// blocked in WaitUntil() wake when the fake time reaches their deadline (or when their condition
// variable is signalled by someone else), so batcher delays and deadlines can be tested without
// sleeping. Header-only; thread-safe.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/core/clock.h"

namespace gemm::core {

class FakeClock final : public Clock {
 public:
  // Starts at `start` (default: an arbitrary fixed instant, 2026-01-01 00:00:00 UTC).
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1767225600)) : now_(start) {}

  // The fake time. Thread-safe.
  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }

  // Waits on `cv` (the caller holds `mu`) until it is signalled or Advance() moves the fake time
  // to or past `deadline`. Returns true if the deadline passed. `mu` and `cv` must stay alive
  // until no Advance() can still be running (tests: destroy them after the last Advance()).
  bool WaitUntil(absl::CondVar* cv, absl::Mutex* mu, absl::Time deadline) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    const Waiter self{cv, mu, deadline};
    {
      absl::MutexLock lock(&mu_);
      if (now_ >= deadline) return true;
      waiters_.push_back(self);
      ++wait_calls_;
    }
    // NOTE: `mu` is held from the check above until Wait() releases it, and Advance() locks `mu`
    // before signalling, so a wake-up between the check and the wait cannot be lost.
    cv->Wait(mu);
    absl::MutexLock lock(&mu_);
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
      if (it->cv == cv && it->mu == mu && it->deadline == deadline) {
        waiters_.erase(it);
        break;
      }
    }
    return now_ >= deadline;
  }

  // Moves the fake time forward by `d` (>= 0) and wakes every waiter whose deadline is reached.
  // Must not be called with any waiter's mutex held. Thread-safe.
  void Advance(absl::Duration d) {
    std::vector<Waiter> due;
    {
      absl::MutexLock lock(&mu_);
      now_ += d;
      for (const Waiter& w : waiters_) {
        if (w.deadline <= now_) due.push_back(w);
      }
    }
    for (const Waiter& w : due) {
      absl::MutexLock lock(w.mu);
      w.cv->SignalAll();
    }
  }

  // Threads blocked in WaitUntil() now.
  int NumWaiters() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(waiters_.size());
  }

  // Total WaitUntil() calls that went to sleep so far (monotonic; lets a test see that a thread
  // went back to sleep after being woken).
  int64_t WaitCalls() {
    absl::MutexLock lock(&mu_);
    return wait_calls_;
  }

  // Blocks (in real time, at most `timeout`) until at least `n` threads are in WaitUntil() and
  // at least `min_wait_calls` WaitUntil() calls have gone to sleep in total. Returns whether
  // that happened. For tests that must know a thread is parked before advancing the clock.
  bool AwaitWaiters(int n, int64_t min_wait_calls = 0, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return static_cast<int>(waiters_.size()) >= n && wait_calls_ >= min_wait_calls;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  }

 private:
  struct Waiter {
    absl::CondVar* cv;
    absl::Mutex* mu;
    absl::Time deadline;
  };

  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  std::vector<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  int64_t wait_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gemm::core
