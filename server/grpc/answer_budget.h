// Backpressure for stream answers. A stream holds the bytes of its answers from the moment a
// request is handed to the engine (its expected output size) until the answer is written to the
// client; it reads its next message only while it holds less than the per-stream cap and the
// whole server holds less than the server cap, so a client that sends faster than it reads is
// slowed down by HTTP/2 flow control instead of growing the server. A stream that holds nothing
// always reads its next message: one answer larger than the caps still goes, alone, and no stream
// is starved by others.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"
#include "server/core/types.h"

namespace gemm::service {

// Where AnswerBytes saturates: far above any answer a server sends, low enough that thousands of
// saturated estimates held at once cannot overflow a 64-bit sum.
inline constexpr int64_t kMaxAnswerBytes = int64_t{1} << 50;

class AnswerBudget {
 public:
  struct Options {
    // Most answer bytes one stream holds before it stops reading. Default 256 MiB.
    int64_t per_stream_bytes = int64_t{256} << 20;
    // Most answer bytes all streams hold together before they stop reading; 0: a quarter of the
    // host's physical memory (DefaultServerBytes()).
    int64_t server_bytes = 0;
  };

  // `options` with a zero server cap replaced by DefaultServerBytes(); INVALID_ARGUMENT for a
  // per-stream cap below 1 or a server cap below 0 or above the host's physical memory.
  static absl::StatusOr<AnswerBudget::Options> Resolve(Options options);
  // A quarter of the host's physical memory (1 GiB when it cannot be read).
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

// The bytes of `request`'s outputs (count*M*N elements of the output dtype per problem, none for
// an output written to shared memory), saturating at kMaxAnswerBytes (sizes validation refuses).
int64_t AnswerBytes(const core::GemmRequest& request);

}  // namespace gemm::service
