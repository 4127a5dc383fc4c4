// Dynamic batcher: bounded priority queues of WorkItems from which backends pull Batches.
// Requests that share a resident B (same matrix, K and output dtype, single problems) are
// coalesced along M up to `max_batch_rows`, waiting at most `max_queue_delay` for company.
// Expired requests are answered DEADLINE_EXCEEDED and cancelled ones CANCELLED without running;
// a full queue answers UNAVAILABLE at once. Time comes from an injected Clock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/core/backend.h"
#include "server/core/clock.h"
#include "server/core/types.h"

namespace gemm::core {

class Metrics;

class Batcher : public WorkSource {
 public:
  struct Options {
    // Longest a request waits for others to coalesce with. Default 200us; 0 disables waiting.
    absl::Duration max_queue_delay = absl::Microseconds(200);
    // Most rows (sum of M) in one coalesced batch. Default 4096. 1 turns coalescing off.
    int64_t max_batch_rows = 4096;
    // Most requests queued (all priorities). Default 1024.
    int64_t queue_capacity = 1024;
    // Whether to coalesce at all. Default true.
    bool enable_batching = true;
    // Where to report queue depth and requests dropped without running. Not owned; may be null
    // (default); must outlive the batcher.
    Metrics* metrics = nullptr;
  };

  // Creates a batcher. `clock` must outlive it (RealClock::Get() in production).
  static absl::StatusOr<std::unique_ptr<Batcher>> Create(const Options& options, Clock* clock);

  ~Batcher() override;

  // Queues `item`. UNAVAILABLE (and `item->done` is NOT called) when the queue is full or the
  // batcher is shut down; the caller answers the client. Never blocks. Thread-safe.
  absl::Status Submit(std::shared_ptr<WorkItem> item);

  // WorkSource: blocks until a batch for `device` is ready; nullopt after Shutdown() once empty.
  std::optional<Batch> Next(int device) override;

  // Stops accepting; Next() keeps handing out what is queued, then returns nullopt.
  void Shutdown();

  // Requests queued now.
  int64_t QueueDepth() const;

 private:
  class Impl;
  explicit Batcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gemm::core
