// Injectable time source, so the batcher's delays and deadlines can be tested by advancing a
// fake clock by hand.
#pragma once

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gemm::core {

class Clock {
 public:
  virtual ~Clock() = default;
  // Current time.
  virtual absl::Time Now() = 0;
  // Waits on `cv` (with `mu` held) until notified or `deadline` passes (by this clock).
  // Returns true if the deadline passed.
  virtual bool WaitUntil(absl::CondVar* cv, absl::Mutex* mu, absl::Time deadline) = 0;
};

// Wall clock (absl::Now).
class RealClock final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  bool WaitUntil(absl::CondVar* cv, absl::Mutex* mu, absl::Time deadline) override {
    return cv->WaitWithDeadline(mu, deadline);
  }
  // A process-wide instance (stateless).
  static RealClock* Get() {
    static RealClock clock;
    return &clock;
  }
};

}  // namespace gemm::core
