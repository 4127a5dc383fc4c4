// Dynamic batcher implementation: two FIFO lists (one per priority) under one mutex, scanned by
// Next() callers that form batches, and a sweeper thread that answers expired and cancelled
// requests while they wait. See batcher.h for the rules.
#include "server/core/batcher.h"

#include <algorithm>
#include <cstdint>
#include <list>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/thread_name.h"
#include "server/core/answer_batch.h"
#include "server/core/coalescing.h"
#include "server/core/metrics.h"

namespace gemm::core {
namespace {

using Key = CoalescingKey;

// One queued request and what the batcher derived from it at Submit().
struct Entry {
  std::shared_ptr<WorkItem> item;
  absl::Time enqueued;
  absl::Time deadline;
  bool coalescible = false;
  Key key;                   // meaningful when coalescible
  int64_t rows = 0;          // M when coalescible; sum of M*count over the problems otherwise
  std::vector<int> devices;  // devices it may run on; empty: any
};

// A request answered by the batcher itself.
struct Drop {
  std::shared_ptr<WorkItem> item;
  absl::Status status;
  const char* reason;  // metrics label
};

constexpr int kHigh = 0;  // index into queues_: high priority first
constexpr int kNormal = 1;
int QueueIndex(Priority p) { return p == Priority::kHigh ? kHigh : kNormal; }

}  // namespace

class Batcher::Impl {
 public:
  Impl(const Options& options, Clock* clock) : options_(options), clock_(clock) {}

  // Starts the sweeper thread (once, right after construction).
  void StartSweeper() {
    sweeper_ = std::thread([this] {
      SetCurrentThreadName("gemm-sweeper");
      SweepUntilStopped();
    });
  }
  // Stops and joins the sweeper thread.
  void StopSweeper();

  std::vector<absl::Status> SubmitAll(std::vector<std::shared_ptr<WorkItem>> items);
  std::optional<Batch> Next(int device);
  void DeviceIdle(int device, uint64_t batches_taken);
  void Shutdown();
  int64_t QueueDepth() const {
    absl::MutexLock lock(&mu_);
    return size_;
  }
  // Empties the queue into drops (destruction).
  std::vector<Drop> DrainAll();
  void Complete(std::vector<Drop>& drops);

 private:
  using Iter = std::list<Entry>::iterator;

  // One round of Next() under the lock: returns true when finished (`*out` holds the batch or
  // nullopt for "no more work"), false when `drops` must be completed before going on.
  bool NextLocked(int device, uint64_t token, std::vector<Drop>* drops, std::optional<Batch>* out,
                  Metrics::Release* why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What Submit derives from `item` (outside the lock), or why it cannot be queued.
  absl::StatusOr<Entry> MakeEntry(const std::shared_ptr<WorkItem>& item) const;
  // Whether `e` must be answered now instead of run; if so, appends it to `drops`.
  bool ShouldDrop(const Entry& e, absl::Time now, std::vector<Drop>* drops) const;
  // Removes `it` from queue `q` (for a drop or a hand-out).
  Entry Remove(int q, Iter it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops every expired or cancelled entry and schedules the next sweep.
  void Sweep(absl::Time now, std::vector<Drop>* drops) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The sweeper thread: sleeps (by the clock) until the next sweep is due, sweeps, and answers
  // what it dropped outside the lock, until StopSweeper().
  void SweepUntilStopped();
  // Brings the next sweep forward to `at` if it is due later, waking the sweeper.
  void ScheduleSweep(absl::Time at) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `key` is being gathered by a Next() call other than `token`.
  bool ReservedByOther(const Key& key, uint64_t token) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the reservation `token` holds, if any, and wakes callers that skipped its key.
  void Unreserve(uint64_t token) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Reserve(const Key& key, uint64_t token) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReportDepth() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `device` reported itself idle and has taken no batch since (dispatch_when_idle).
  bool IdleLocked(int device) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!options_.dispatch_when_idle || devices_.empty()) return false;
    auto it = devices_.find(device);
    return it != devices_.end() && it->second.idle;
  }

  static bool Runnable(const Entry& e, int device) {
    if (device < 0 || e.devices.empty()) return true;
    return std::find(e.devices.begin(), e.devices.end(), device) != e.devices.end();
  }

  const Options options_;
  Clock* const clock_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;        // queue changed, a reservation was dropped, or shutdown
  absl::CondVar sweep_cv_;  // the next sweep came forward, or the sweeper must stop
  std::list<Entry> queues_[2] ABSL_GUARDED_BY(mu_);
  int64_t size_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_token_ ABSL_GUARDED_BY(mu_) = 1;
  // Keys a waiting Next() call is gathering a batch for, and the call's token.
  absl::flat_hash_map<Key, uint64_t> reserved_ ABSL_GUARDED_BY(mu_);
  // A lower bound of the earliest deadline queued, and when the next sweep is due.
  absl::Time earliest_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Time next_sweep_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // Per device (Next()'s argument): batches handed out, and whether it has reported itself idle
  // since the last one (DeviceIdle).
  struct DeviceState {
    uint64_t taken = 0;
    bool idle = false;
  };
  absl::flat_hash_map<int, DeviceState> devices_ ABSL_GUARDED_BY(mu_);
  bool stop_sweeper_ ABSL_GUARDED_BY(mu_) = false;
  std::thread sweeper_;
};

absl::StatusOr<Entry> Batcher::Impl::MakeEntry(const std::shared_ptr<WorkItem>& item) const {
  if (item == nullptr || !item->done || item->request.problems.empty()) {
    return absl::InvalidArgumentError("batcher: work item without callback or problems");
  }
  const GemmRequest& req = item->request;

  Entry e;
  // Devices every resident matrix of the request lives on.
  if (std::optional<std::vector<int>> devices = CommonDevices(req); devices.has_value()) {
    if (devices->empty()) {
      return absl::FailedPreconditionError(
          "the resident matrices of this request live on different devices");
    }
    e.devices = std::move(*devices);
  }
  const bool batching = options_.enable_batching && options_.max_batch_rows > 1;
  std::optional<Key> key = batching ? CoalescingKeyOf(req) : std::nullopt;
  e.coalescible = key.has_value();
  if (e.coalescible) e.key = std::move(*key);
  // (A coalescible request's problems each have count 1: its rows are the sum of their M.)
  for (const Problem& p : req.problems) e.rows += p.m * std::max<int64_t>(p.count, 1);
  e.deadline = req.deadline;
  return e;
}

std::vector<absl::Status> Batcher::Impl::SubmitAll(std::vector<std::shared_ptr<WorkItem>> items) {
  std::vector<absl::Status> statuses(items.size());
  std::vector<std::optional<Entry>> entries(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    absl::StatusOr<Entry> e = MakeEntry(items[i]);
    if (e.ok()) {
      entries[i] = std::move(*e);
    } else {
      statuses[i] = e.status();
    }
  }
  int refused = 0;  // items refused for a full queue or shutdown
  bool shutdown = false;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    bool queued = false;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!entries[i].has_value()) continue;
      if (shutdown_ || size_ >= options_.queue_capacity) {
        shutdown = shutdown_;
        ++refused;
        statuses[i] = shutdown_
                          ? absl::UnavailableError("server shutting down")
                          : absl::UnavailableError(absl::StrCat(
                                "queue full: ", size_, " requests queued (--queue_capacity)"));
        continue;
      }
      Entry& e = *entries[i];
      if (items[i]->arrival == absl::Time()) items[i]->arrival = now;
      e.enqueued = now;
      e.item = std::move(items[i]);
      earliest_deadline_ = std::min(earliest_deadline_, e.deadline);
      ScheduleSweep(
          std::min(earliest_deadline_ + absl::Nanoseconds(1), now + options_.sweep_interval));
      queues_[QueueIndex(e.item->request.priority)].push_back(std::move(e));
      ++size_;
      queued = true;
    }
    if (queued) {
      ReportDepth();
      cv_.SignalAll();  // once for all of them
    }
  }
  if (options_.metrics != nullptr) {
    for (int i = 0; i < refused; ++i) {
      options_.metrics->RecordDropped(shutdown ? "shutdown" : "queue_full");
    }
  }
  return statuses;
}

std::optional<Batch> Batcher::Impl::Next(int device) {
  uint64_t token;
  {
    absl::MutexLock lock(&mu_);
    token = next_token_++;
  }
  for (;;) {
    std::vector<Drop> drops;
    std::optional<Batch> out;
    Metrics::Release why = Metrics::Release::kAlone;
    bool finished;
    {
      absl::MutexLock lock(&mu_);
      finished = NextLocked(device, token, &drops, &out, &why);
      if (finished) Unreserve(token);
    }
    Complete(drops);
    if (finished && out.has_value() && options_.metrics != nullptr) {
      options_.metrics->RecordBatchReleased(why);
    }
    if (finished) return out;
  }
}

void Batcher::Impl::DeviceIdle(int device, uint64_t batches_taken) {
  if (!options_.dispatch_when_idle) return;
  absl::MutexLock lock(&mu_);
  DeviceState& d = devices_[device];
  if (d.idle || d.taken != batches_taken) return;  // already known, or stale
  d.idle = true;
  cv_.SignalAll();
}

bool Batcher::Impl::NextLocked(int device, uint64_t token, std::vector<Drop>* drops,
                               std::optional<Batch>* out, Metrics::Release* why) {
  for (;;) {
    const absl::Time now = clock_->Now();
    // An idle device waits for no company, and takes keys other callers are gathering too.
    const bool idle = IdleLocked(device);

    // The leader: oldest runnable entry of the highest priority, skipping keys another caller
    // is gathering.
    int lq = -1;
    Iter leader;
    for (int q = kHigh; q <= kNormal && lq < 0; ++q) {
      for (Iter it = queues_[q].begin(); it != queues_[q].end();) {
        if (!Runnable(*it, device) ||
            (it->coalescible && !idle && ReservedByOther(it->key, token))) {
          ++it;
          continue;
        }
        if (ShouldDrop(*it, now, drops)) {
          Remove(q, it++);
          continue;
        }
        lq = q;
        leader = it;
        break;
      }
    }

    if (lq < 0) {
      Unreserve(token);
      if (shutdown_) return true;  // *out stays nullopt
      if (!drops->empty()) return false;
      // Nothing to take: wait for work (the sweeper answers what expires meanwhile).
      clock_->WaitUntil(&cv_, &mu_, absl::InfiniteFuture());
      continue;
    }

    // Members of the leader's batch, in queue order within each priority.
    std::vector<std::pair<int, Iter>> members = {{lq, leader}};
    int64_t rows = leader->rows;
    bool full = !leader->coalescible || rows >= options_.max_batch_rows;
    const absl::Time delay_end = leader->enqueued + options_.max_queue_delay;
    absl::Time release_at = std::min(delay_end, leader->deadline);
    if (leader->coalescible && !full) {
      for (int q : {lq, 1 - lq}) {
        for (Iter it = queues_[q].begin();
             it != queues_[q].end() && rows < options_.max_batch_rows;) {
          if (it == leader || !it->coalescible || !(it->key == leader->key) ||
              !Runnable(*it, device)) {
            ++it;
            continue;
          }
          if (ShouldDrop(*it, now, drops)) {
            Remove(q, it++);
            continue;
          }
          if (rows + it->rows > options_.max_batch_rows) {
            // A compatible request is waiting that does not fit: waiting cannot help this batch.
            // NOTE: later, smaller ones may still fit; the skipped one leads a later batch.
            full = true;
            ++it;
            continue;
          }
          rows += it->rows;
          release_at = std::min(release_at, it->deadline);
          members.emplace_back(q, it);
          ++it;
        }
      }
      full = full || rows >= options_.max_batch_rows;
    }

    if (full || shutdown_ || now >= release_at || idle) {
      const bool leader_coalescible = leader->coalescible;
      Batch batch;
      batch.released = now;
      batch.rows = rows;
      batch.items.reserve(members.size());
      for (auto& [q, it] : members) batch.items.push_back(Remove(q, it).item);
      *out = std::move(batch);
      using R = Metrics::Release;
      *why = !leader_coalescible ? R::kAlone
             : full              ? R::kFull
             : shutdown_         ? R::kShutdown
             : now >= release_at ? (release_at < delay_end ? R::kDeadline : R::kDelay)
                                 : R::kIdle;
      DeviceState& d = devices_[device];
      ++d.taken;
      d.idle = false;
      return true;
    }

    // Wait for company, holding the key so other callers serve the rest of the queue.
    Reserve(leader->key, token);
    if (!drops->empty()) return false;
    clock_->WaitUntil(&cv_, &mu_, release_at);
  }
}

bool Batcher::Impl::ShouldDrop(const Entry& e, absl::Time now, std::vector<Drop>* drops) const {
  if (now > e.deadline) {
    drops->push_back({e.item,
                      absl::DeadlineExceededError(
                          absl::StrCat("deadline exceeded after ",
                                       absl::ToInt64Microseconds(now - e.enqueued), "us in queue")),
                      "deadline"});
    return true;
  }
  if (e.item->cancelled && e.item->cancelled()) {
    drops->push_back({e.item, absl::CancelledError("request cancelled while queued"), "cancelled"});
    return true;
  }
  return false;
}

Entry Batcher::Impl::Remove(int q, Iter it) {
  Entry e = std::move(*it);
  queues_[q].erase(it);
  --size_;
  ReportDepth();
  return e;
}

void Batcher::Impl::Sweep(absl::Time now, std::vector<Drop>* drops) {
  absl::Time earliest = absl::InfiniteFuture();
  for (int q = kHigh; q <= kNormal; ++q) {
    for (Iter it = queues_[q].begin(); it != queues_[q].end();) {
      if (ShouldDrop(*it, now, drops)) {
        Remove(q, it++);
      } else {
        earliest = std::min(earliest, it->deadline);
        ++it;
      }
    }
  }
  earliest_deadline_ = earliest;
  // Expired means Now() > deadline, so the sweep for a deadline is due just after it.
  next_sweep_ = size_ == 0
                    ? absl::InfiniteFuture()
                    : std::min(earliest + absl::Nanoseconds(1), now + options_.sweep_interval);
}

void Batcher::Impl::ScheduleSweep(absl::Time at) {
  if (at >= next_sweep_) return;
  next_sweep_ = at;
  sweep_cv_.Signal();
}

void Batcher::Impl::SweepUntilStopped() {
  for (;;) {
    std::vector<Drop> drops;
    {
      absl::MutexLock lock(&mu_);
      while (!stop_sweeper_ && clock_->Now() < next_sweep_) {
        clock_->WaitUntil(&sweep_cv_, &mu_, next_sweep_);
      }
      if (stop_sweeper_) return;
      Sweep(clock_->Now(), &drops);
    }
    Complete(drops);
  }
}

void Batcher::Impl::StopSweeper() {
  {
    absl::MutexLock lock(&mu_);
    stop_sweeper_ = true;
    sweep_cv_.Signal();
  }
  if (sweeper_.joinable()) sweeper_.join();
}

bool Batcher::Impl::ReservedByOther(const Key& key, uint64_t token) const {
  if (reserved_.empty()) return false;
  auto it = reserved_.find(key);
  return it != reserved_.end() && it->second != token;
}

void Batcher::Impl::Reserve(const Key& key, uint64_t token) {
  auto it = reserved_.find(key);
  if (it != reserved_.end() && it->second == token) return;
  Unreserve(token);
  reserved_.emplace(key, token);
}

void Batcher::Impl::Unreserve(uint64_t token) {
  for (auto it = reserved_.begin(); it != reserved_.end(); ++it) {
    if (it->second == token) {
      reserved_.erase(it);
      cv_.SignalAll();
      return;
    }
  }
}

void Batcher::Impl::ReportDepth() {
  if (options_.metrics != nullptr) options_.metrics->SetQueueDepth(size_);
}

void Batcher::Impl::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  cv_.SignalAll();
}

std::vector<Drop> Batcher::Impl::DrainAll() {
  std::vector<Drop> drops;
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  for (int q = kHigh; q <= kNormal; ++q) {
    while (!queues_[q].empty()) {
      Entry e = Remove(q, queues_[q].begin());
      drops.push_back(
          {std::move(e.item), absl::UnavailableError("server shutting down"), "shutdown"});
    }
  }
  return drops;
}

void Batcher::Impl::Complete(std::vector<Drop>& drops) {
  if (drops.empty()) return;
  AnswerBatch answers;  // answers bound for one stream leave together
  for (Drop& d : drops) {
    if (options_.metrics != nullptr) options_.metrics->RecordDropped(d.reason);
    d.item->done(std::move(d.status));
  }
}

// ---------------------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Batcher>> Batcher::Create(const Options& options, Clock* clock) {
  if (clock == nullptr) return absl::InvalidArgumentError("batcher: null clock");
  if (options.max_queue_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("batcher: max_queue_delay must be >= 0");
  }
  if (options.max_batch_rows < 1) {
    return absl::InvalidArgumentError("batcher: max_batch_rows must be >= 1");
  }
  if (options.queue_capacity < 1) {
    return absl::InvalidArgumentError("batcher: queue_capacity must be >= 1");
  }
  if (options.sweep_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("batcher: sweep_interval must be > 0");
  }
  auto impl = std::make_unique<Impl>(options, clock);
  // NOTE: std::thread reports failure by throwing; turn it into a Status here.
  try {
    impl->StartSweeper();
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("batcher: cannot start the sweeper thread: ", e.what()));
  }
  return std::unique_ptr<Batcher>(new Batcher(std::move(impl)));
}

Batcher::Batcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Batcher::~Batcher() {
  impl_->StopSweeper();
  std::vector<Drop> drops = impl_->DrainAll();
  impl_->Complete(drops);
}

absl::Status Batcher::Submit(std::shared_ptr<WorkItem> item) {
  std::vector<std::shared_ptr<WorkItem>> items;
  items.push_back(std::move(item));
  return impl_->SubmitAll(std::move(items))[0];
}

std::vector<absl::Status> Batcher::SubmitAll(std::vector<std::shared_ptr<WorkItem>> items) {
  return impl_->SubmitAll(std::move(items));
}

std::optional<Batch> Batcher::Next(int device) { return impl_->Next(device); }

void Batcher::DeviceIdle(int device, uint64_t batches_taken) {
  impl_->DeviceIdle(device, batches_taken);
}

void Batcher::Shutdown() { impl_->Shutdown(); }

int64_t Batcher::QueueDepth() const { return impl_->QueueDepth(); }

}  // namespace gemm::core
