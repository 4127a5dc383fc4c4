// WorkBudget: the engine's admission budget (--max_in_flight_bytes): the bytes of the requests
// it is computing, operands in request messages plus response outputs (RequestBytes::held()).
// Admission takes a request's bytes and handing its answer to the call gives them back, so that
// many small requests asking for large answers cannot together exhaust the host's memory. Stream
// answers waiting to be written are bounded apart, by backpressure (service::AnswerBudget).
// Thread-safe.
#pragma once

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace gemm::core {

class WorkBudget {
 public:
  // A budget of `capacity` bytes (> 0), named in errors by `flag` (e.g. "max_in_flight_bytes").
  WorkBudget(int64_t capacity, const char* flag);

  // Takes `bytes` (>= 0) if they fit beside the bytes held now. RESOURCE_EXHAUSTED naming the
  // budget and its flag otherwise: "try again later" while others hold it, "can never fit" when
  // `bytes` alone exceed the capacity. Never blocks beyond a short lock.
  absl::Status Acquire(int64_t bytes);

  // Gives back `bytes` taken by a successful Acquire().
  void Release(int64_t bytes);

  // Bytes held now.
  int64_t held() const;
  int64_t capacity() const { return capacity_; }

 private:
  const int64_t capacity_;
  const char* const flag_;
  mutable absl::Mutex mu_;
  int64_t held_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gemm::core
