// Flags for queueing requests and coalescing them into batches (see server/core/batcher.h).
#include <cstdint>

#include "absl/flags/flag.h"
#include "server/options/flag_groups.h"

namespace {

const gemm::core::Batcher::Options kBatcher;

}  // namespace

ABSL_FLAG(int64_t, max_queue_delay_us, absl::ToInt64Microseconds(kBatcher.max_queue_delay),
          "Longest a request waits to be coalesced while its device is busy (us).");
ABSL_FLAG(int64_t, max_batch_rows, kBatcher.max_batch_rows,
          "Most rows (sum of M) in one coalesced GEMM.");
ABSL_FLAG(int64_t, queue_capacity, kBatcher.queue_capacity,
          "Most queued requests; beyond it UNAVAILABLE.");
ABSL_FLAG(bool, batching, kBatcher.enable_batching, "Coalesce requests that share a resident B.");
ABSL_FLAG(bool, dispatch_when_idle, kBatcher.dispatch_when_idle,
          "An idle device (the CUDA backend: see --idle_units_per_device; the CPU backend: no "
          "batch running) takes its next batch at once instead of waiting --max_queue_delay_us "
          "for company (the delay applies while it is busy).");

namespace gemm::server {

void ApplyBatchingFlags(ServerOptions& options) {
  core::Batcher::Options& b = options.engine.batcher;
  b.max_queue_delay = absl::Microseconds(absl::GetFlag(FLAGS_max_queue_delay_us));
  b.max_batch_rows = absl::GetFlag(FLAGS_max_batch_rows);
  b.queue_capacity = absl::GetFlag(FLAGS_queue_capacity);
  b.enable_batching = absl::GetFlag(FLAGS_batching);
  b.dispatch_when_idle = absl::GetFlag(FLAGS_dispatch_when_idle);
}

}  // namespace gemm::server
