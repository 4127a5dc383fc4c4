// Backpressure for stream answers (--max_stream_answer_bytes, --max_answer_bytes). A stream holds
// the bytes of each answer (core::ResponseBytes of its request) from the moment the request is
// handed to the engine until the answer is written to the client or dropped; it reads its next
// message only while it holds less than the per-stream cap and the whole server holds less than
// the server cap, so a client that sends faster than it reads is slowed down by HTTP/2 flow
// control instead of growing the server. A stream that holds nothing always reads its next
// message: one answer larger than the caps still goes, alone, and no stream is starved by others.
//
// NOTE: this is not the engine's admission budget (--max_in_flight_bytes, core::WorkBudget). That
// one refuses a request (RESOURCE_EXHAUSTED) whose operands and response do not fit beside those
// of requests being computed, and gives the bytes back when the answer is handed to the call.
// This one never refuses: it stops reading, and it keeps counting an answer until it has been
// written, which is where a client that does not read holds the server's memory.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"

namespace gemm::service {

class AnswerBudget {
 public:
  struct Options {
    // --max_stream_answer_bytes. Default 256 MiB.
    int64_t per_stream_bytes = int64_t{256} << 20;
    // --max_answer_bytes; 0 (default): DefaultServerBytes().
    int64_t server_bytes = 0;
  };

  // `options` with a zero server cap replaced by DefaultServerBytes(); INVALID_ARGUMENT for a
  // per-stream cap below 1 or a server cap below 0 or above half the host's usable memory.
  static absl::StatusOr<AnswerBudget::Options> Resolve(Options options);
  // A quarter of the host's usable memory (RAM or the cgroup limit; 1 GiB when it cannot be
  // read).
  static int64_t DefaultServerBytes();

  // `options` resolved (see Resolve).
  explicit AnswerBudget(const Options& options) : options_(options) {}

  // A stream takes or gives back `bytes`. Thread-safe.
  void Take(int64_t bytes) { held_.fetch_add(bytes, std::memory_order_relaxed); }
  void Give(int64_t bytes) { held_.fetch_sub(bytes, std::memory_order_relaxed); }

  // Whether a stream holding `stream_bytes` may read its next message. Thread-safe.
  bool MayRead(int64_t stream_bytes) const {
    return stream_bytes == 0 || (stream_bytes < options_.per_stream_bytes &&
                                 held_.load(std::memory_order_relaxed) < options_.server_bytes);
  }

  // Bytes all streams hold now.
  int64_t held() const { return held_.load(std::memory_order_relaxed); }
  const Options& options() const { return options_; }

 private:
  const Options options_;
  std::atomic<int64_t> held_{0};
};

}  // namespace gemm::service
