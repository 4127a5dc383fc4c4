// The counters of the current measurement window: every finished request is recorded here (from
// gRPC's threads and the sync callers), and the point's loop takes the window when it ends.
// Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>

#include "client/loadgen/operands.h"
#include "client/loadgen/stats.h"
#include "gemm/v1/gemm_service.pb.h"

namespace gemm::loadgen {

class WindowRecorder {
 public:
  WindowRecorder();

  // A successful request of shape `s`, `latency_ns` after its intended send time; `verified`:
  // its output was checked, `mismatch`: and found wrong.
  void RecordSuccess(const ShapeOperands& s, int64_t latency_ns, const v1::GemmResponse& resp,
                     bool verified, bool mismatch);
  // A failed request and its gRPC status code.
  void RecordFailure(int code);

  // The counters since the previous call (or construction), with the time they cover; starts
  // the next window.
  WindowStats TakeWindow();

  // The current window so far, for a progress line.
  struct Snapshot {
    int64_t ok = 0, failed = 0;
    double p99_ms = 0;
    double elapsed_s = 0;
  };
  Snapshot Peek() const;

 private:
  mutable std::mutex mu_;
  WindowStats current_;      // guarded by mu_
  int64_t window_start_ns_;  // guarded by mu_
};

// Monotonic clock in nanoseconds, the time base of the load generator.
int64_t NowNs();

}  // namespace gemm::loadgen
