// Dynamic batcher: bounded priority queues of WorkItems from which backends pull Batches.
// Requests that share a resident B (same matrix, K and output dtype, single problems) are
// coalesced along M up to `max_batch_rows`, and so are expert groups (mixture-of-experts steps
// over resident matrices), waiting at most `max_queue_delay` for company.
// Expired requests are answered DEADLINE_EXCEEDED and cancelled ones CANCELLED without running;
// a full queue answers UNAVAILABLE at once. Time comes from an injected Clock.
//
// Pull model: each backend worker thread calls Next(device) when it has capacity, which is what
// spreads load over GPUs. Rules Next() follows:
//  - Two priorities; the oldest runnable item of the highest priority leads the next batch; FIFO
//    within a priority.
//  - Coalescing key: core::CoalescingKeyOf (coalescing.h), the rule the backends group a batch
//    by too: single problems on one resident B coalesce when they share its layout, output
//    dtype, alpha, beta, whether C is given and the requested kernel; expert groups coalesce
//    with each other whatever matrices they name (their rows count toward `max_batch_rows` in
//    all). Everything else (inline B, batch requests, other groups) is a batch of one, released
//    at once.
//  - The leader's batch gathers compatible items (same priority first, then the other) while the
//    sum of M fits `max_batch_rows` (a leader larger than that runs alone). A batch that is not
//    full waits until `max_queue_delay` after the leader was queued, more items arrive, or the
//    earliest member deadline. While one Next() call waits on a key, other callers skip that
//    key and serve the rest of the queue.
//  - Idle devices do not wait (`dispatch_when_idle`): a caller whose device reported itself idle
//    (DeviceIdle) and has taken no batch since gets its batch at once with whatever is queued,
//    also one that another caller is gathering. Waiting for company only pays while the device
//    is busy; a lone request at an idle server would otherwise sit out the whole delay.
//  - Device affinity: an item whose resident B lives on `desc().devices` is only handed to
//    Next(d) for d in that list; {-1} or an empty list, no resident B, or a caller passing -1
//    means any caller. (A group whose matrices live on disjoint devices is refused by Submit;
//    GemmEngine splits such a group into one request per device first, DeviceSplit.)
//  - An item past its deadline (clock Now() > request.deadline) is answered DEADLINE_EXCEEDED,
//    one whose `cancelled()` returns true is answered CANCELLED; neither is handed out. Items are
//    checked when handed out, and the batcher's sweeper thread sweeps the queue just after the
//    earliest queued deadline and every `sweep_interval`, so an expired or cancelled request
//    leaves the queue then, even while every device is busy and no Next() call is waiting.
//  - Each item is either handed out in exactly one Batch or completed (`done`) exactly once by
//    the batcher; `done` is called without the batcher's lock held, on a Next() caller's thread,
//    the sweeper thread, or the destructor's.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

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
    // Longest a request waits for others to coalesce with. Default 50us (the best closed- and
    // open-loop decode figures on H200 and H100, docs/PERF.md); 0 disables waiting.
    absl::Duration max_queue_delay = absl::Microseconds(50);
    // Most rows (sum of M) in one coalesced batch. Default 4096. 1 turns coalescing off.
    int64_t max_batch_rows = 4096;
    // Most requests queued (all priorities). Default 1024.
    int64_t queue_capacity = 1024;
    // Whether to coalesce at all. Default true.
    bool enable_batching = true;
    // Whether a device that reported itself idle (DeviceIdle) gets its next batch without waiting
    // for company. Default true; false: every partial batch waits out `max_queue_delay`.
    bool dispatch_when_idle = true;
    // How often the sweeper thread sweeps the whole queue for cancelled requests while it is
    // not empty (expired ones are swept at their deadline). Default 10ms.
    absl::Duration sweep_interval = absl::Milliseconds(10);
    // Where to report queue depth and requests dropped without running. Not owned; may be null
    // (default); must outlive the batcher.
    Metrics* metrics = nullptr;
  };

  // Creates a batcher and starts its sweeper thread. `clock` must outlive it (RealClock::Get() in
  // production). INVALID_ARGUMENT for a negative delay, a non-positive row or queue bound or
  // sweep interval, or a null clock; RESOURCE_EXHAUSTED when the thread cannot be started.
  static absl::StatusOr<std::unique_ptr<Batcher>> Create(const Options& options, Clock* clock);

  // Stops the sweeper, shuts down and answers anything still queued UNAVAILABLE. No Next() call
  // may be in progress (join the backend's workers first).
  ~Batcher() override;

  // Queues `item` (which must have `done` set and one problem at least). On any error
  // `item->done` is NOT called and the caller answers the client: UNAVAILABLE when the queue is
  // full or the batcher is shut down, FAILED_PRECONDITION when the request's resident matrices
  // share no device, INVALID_ARGUMENT for a malformed item. Sets `item->arrival` to the clock's
  // Now() if it was left at its default (the Unix epoch). Never blocks beyond a short lock.
  // Thread-safe. `item->cancelled` must be cheap, non-blocking and not call into the batcher (it
  // is polled under the batcher's lock).
  absl::Status Submit(std::shared_ptr<WorkItem> item);

  // Submit() for several items at once (the requests of one wire message), under one lock and
  // with one wake-up, so that a batch being gathered takes all of them or none. Returns one status
  // per item, with Submit()'s meaning; when the queue fills part-way, the items that found it full
  // are refused and the others queued. Thread-safe.
  std::vector<absl::Status> SubmitAll(std::vector<std::shared_ptr<WorkItem>> items);

  // WorkSource: blocks until a batch for `device` is ready (see the rules above); after
  // Shutdown() it stops waiting for company and returns nullopt once nothing runnable on `device`
  // is left. Thread-safe; any number of concurrent callers.
  std::optional<Batch> Next(int device) override;

  // WorkSource: `device` is idle after the first `batches_taken` batches handed to Next(device);
  // a partial batch for it is then released at once (stale reports are ignored).
  // Thread-safe; takes the batcher's lock briefly.
  void DeviceIdle(int device, uint64_t batches_taken) override;

  // Stops accepting; Next() keeps handing out what is queued, then returns nullopt. Idempotent.
  // Thread-safe.
  void Shutdown();

  // Requests queued now. Thread-safe. (Also reported to Options::metrics on every change.)
  int64_t QueueDepth() const;

 private:
  class Impl;
  explicit Batcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gemm::core
