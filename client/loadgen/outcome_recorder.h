// The load generator's judge of finished requests: a successful response is checked (its output
// sizes always, its values for the sampled share), the first mismatches are logged, and the
// outcome is counted in the current measurement window. Thread-safe (called from gRPC's threads
// and the sync callers).
#pragma once

#include <grpcpp/support/status.h>

#include <atomic>
#include <vector>

#include "client/loadgen/call_stream.h"
#include "client/loadgen/operands.h"
#include "client/loadgen/response_checker.h"
#include "client/loadgen/window_recorder.h"
#include "gemm/v1/gemm_service.pb.h"

namespace gemm::loadgen {

class OutcomeRecorder {
 public:
  // `shapes`, `checker` and `window` must outlive the recorder.
  OutcomeRecorder(const std::vector<ShapeOperands>& shapes, const ResponseChecker& checker,
                  WindowRecorder& window)
      : shapes_(shapes), checker_(checker), window_(window) {}

  // Records how `c` ended: `status`, and `resp` (null when the call failed; it may carry a
  // stream error). Returns whether the request succeeded.
  bool Record(const Call& c, const grpc::Status& status, const v1::GemmResponse* resp);

 private:
  // Whether the successful response `resp` to `c` is right; *verified: its values were checked.
  void Check(const Call& c, const v1::GemmResponse& resp, bool* verified, bool* mismatch);

  const std::vector<ShapeOperands>& shapes_;
  const ResponseChecker& checker_;
  WindowRecorder& window_;
  std::atomic<int> mismatch_logs_{0};
};

}  // namespace gemm::loadgen
