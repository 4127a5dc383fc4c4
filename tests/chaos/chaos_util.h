// Small helpers the chaos clients share: choices from a seeded generator, status code names,
// deadlines.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "tests/chaos/chaos_requests.h"

namespace gemm::testing {

// A number in [lo, hi].
inline int Uniform(Rng& rng, int lo, int hi) {
  return absl::Uniform<int>(absl::IntervalClosed, rng, lo, hi);
}

// "OK", "CANCELLED", ... for a gRPC status code.
inline std::string CodeName(int code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}
inline std::string CodeName(grpc::StatusCode code) { return CodeName(static_cast<int>(code)); }

// The deadline `d` from now.
inline std::chrono::system_clock::time_point DeadlineIn(absl::Duration d) {
  return absl::ToChronoTime(absl::Now() + d);
}

}  // namespace gemm::testing
