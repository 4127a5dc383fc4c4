// The executor of one GPU: launch threads pull batches from the WorkSource with Next(ordinal),
// turns each into one or more units (a coalesced batch sharing a resident B = ONE GEMM over the
// stacked A rows; a batch request = one strided-batch call; a group request = GemmGrouped), and
// enqueues each unit: pinned staging -> 2D H2D copies into pitched pool buffers on one of the
// device's non-blocking streams -> kernels on the device's compute stream (between two events, so
// kernels never run two at a time while other units' copies overlap them) -> D2H -> an event the
// event watcher polls (a CUDA host function when no event could be had). A completion thread (or,
// for a unit with little to copy out, the event watcher itself) then hands the results to the
// responses, frees everything the unit took and completes its WorkItems. Inline results land in
// an answer block of their own and are sent from there (pinned_answers.h); when none can be had,
// they land in the unit's staging and are copied out. Both host copies (request bytes -> staging,
// staging -> response bytes) are split over the shared HostCopier's threads. The pulling
// thread never waits on the GPU (except for a single item larger than a staging slab, copied
// straight from pageable memory; a coalesced unit that large runs its items one by one instead), so
// consecutive units overlap across streams. Operands and outputs in page-locked client shared
// memory (registered regions) skip staging: the device copies read and write them in place.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/core/backend.h"
#include "server/gpu/copy_batch.h"
#include "server/gpu/device_context.h"
#include "server/gpu/event_watcher.h"
#include "server/gpu/executor_options.h"
#include "server/gpu/host_copier.h"
#include "server/gpu/pinned_answers.h"
#include "server/gpu/staging_pool.h"

namespace gemm::gpu {

struct Unit;     // one kernel-call group in flight (unit.h)
struct OutCopy;  // one of its copies out (unit.h)

class Executor {
 public:
  // `device` is shared; `staging`, `answers` (answer blocks from `staging`) and `copier` (shared
  // by all executors) must outlive the executor. `copier` may be null: host copies then run on
  // the executor's own threads.
  Executor(std::shared_ptr<DeviceContext> device, StagingPool* staging, PinnedAnswers* answers,
           HostCopier* copier, const ExecutorOptions& options);
  // Joins (Join() must have been called if Start() was).
  ~Executor();

  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Starts the launch and completion threads. `source` must outlive Join().
  void Start(core::WorkSource* source);

  // Waits until the source returned nullopt and every unit has completed, then stops the
  // completion threads. Blocking; call once from the backend's Stop().
  void Join();

  // Units enqueued and not yet completed.
  int64_t in_flight() const;

  const DeviceContext& device() const { return *device_; }

 private:
  // `o` with counts clamped to their valid ranges (every other field kept as given).
  static ExecutorOptions Normalized(ExecutorOptions o);
  void PullLoop(core::WorkSource* source);
  // Whether a launch thread may pull a batch now (the in-flight bounds).
  bool MayPullLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool bounded() const { return options_.max_units_in_flight_per_device > 0 || max_work_us_ > 0; }
  // Estimated GPU time of `unit` at the device's peak rates (microseconds).
  double EstimateUs(const Unit& unit) const;
  // Counts `unit` in flight (units and estimated work).
  void CountInFlightLocked(Unit& unit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunBatch(core::Batch batch);
  // How a stage of RunUnit ended. ok(): go on. Else the unit stops with `status` for its items;
  // with `items_alone` (and several items), it failed as a whole for a reason that may concern
  // only some of them (one bad operand, too large together), so each runs as a unit of its own.
  struct StageResult {
    absl::Status status;
    bool items_alone = false;
    bool ok() const { return status.ok() && !items_alone; }
  };
  // Runs `unit` through its stages: resolve (kernel, resident B ready), plan, acquire memory
  // (device pool, staging, request bytes into staging), enqueue copies and kernels, hand off to
  // the completion path. A stage that fails hands the unit on through Abandon().
  void RunUnit(std::unique_ptr<Unit> unit);
  // Ends `unit` after a failed stage (its memory already returned): runs its items alone or
  // fails them, then hands it to the completion thread.
  void Abandon(std::unique_ptr<Unit> unit, StageResult result);
  // Sets `unit`'s kernel: asks the kernel library (kernel::ChooseKernel) with the requested name
  // and the device's kernel and self-test outcome.
  StageResult ResolveKernel(Unit& unit) const;
  // Waits until the resident B matrices `unit` names have finished uploading.
  static StageResult WaitForResident(const Unit& unit);
  // Picks the unit's streams and plans it (sizes; offsets relative to 0).
  StageResult PlanUnit(Unit& unit) const;
  // Takes the unit's device memory and staging, plans it at the real addresses and copies the
  // request bytes into staging; on success the unit owns the memory, else it is returned.
  StageResult AcquireMemory(Unit& unit);
  // Copies the unit's operands that are not page-locked into `staging` (those that arrived in
  // pieces piece by piece).
  StageResult CopyIntoStaging(Unit& unit, char* staging);
  // The direct path (no staging): gathers each operand that arrived in pieces into one range kept
  // by the unit (unit.gathered) and points its copy there.
  static void GatherPieces(Unit& unit);
  // Under the stream's enqueue lock: timing events, H2D copies, kernels, D2H copies, and the
  // free of the device memory after them. Sets unit.status.
  void EnqueueWork(Unit& unit, absl::Time* mark);
  // Takes the unit's timing events (unit.timed) and decides whether it is sampled.
  void TakeEvents(Unit& unit);
  // Records event `i` of `unit` on `stream` if the unit is timed (and sampled, or i is the
  // completion event 3); a failure only makes the unit untimed.
  void RecordEvent(Unit& unit, int i, cudaStream_t stream);
  absl::Status EnqueueCopiesIn(const Unit& unit);
  absl::Status EnqueueCopiesOut(Unit& unit);
  // Enqueues one direction's copies on the unit's stream (host copies, then device copies).
  absl::Status SubmitCopies(const Unit& unit, std::vector<Copy2D>& copies,
                            std::vector<Copy2D>& device_copies, cudaMemcpyKind kind);
  // Enqueues the kernels on the unit's kernel stream, ordered after its copy-in and before its
  // copy-out; `st` is the copy-in's status (kernels are only launched after a good one).
  absl::Status EnqueueKernels(Unit& unit, absl::Status st);
  // The kernel-library options of `unit`'s calls (kind, qualified variants, workspace), the
  // kernel that serves one reported to `served`.
  kernel::LaunchOptions LaunchOptionsFor(const Unit& unit, kernel::KernelKind* served) const;
  // Does the host work of the unit's single calls (kernel::Prepare) before anything of it is
  // enqueued.
  void PrepareLaunches(Unit& unit) const;
  // The first error of those calls' preparation (OK when every one is ready to launch).
  static absl::Status PreparedStatus(const Unit& unit);
  // Launches the unit's kernel-library calls on its kernel stream.
  absl::Status LaunchKernels(Unit& unit);
  // Hands the enqueued unit to its completion path (polled event, else a CUDA host function).
  void HandOff(std::unique_ptr<Unit> unit, absl::Time launch_start, absl::Time* mark);
  // Runs each item of `u` as a unit of its own (after a coalesced batch failed as a whole for a
  // reason that may concern only some items); leaves `u` without items.
  void RunItemsAlone(Unit* u);
  // Hands a unit whose work is enqueued (or failed before) to the completion thread.
  void Enqueued(Unit* unit);
  // `unit`'s GPU work is over (or it never got any): takes it out of gpu_pending_ (once).
  void GpuDone(Unit* unit);
  // Tells the source this GPU is idle if at most options_.idle_units_per_device of the units it
  // took are pending on the GPU now.
  void ReportIfIdle();
  void CompletionLoop();
  // Frees what `unit` took and answers its items: the first on this thread, the others queued
  // for the other completion threads (answering one request costs ~10-20 us of gRPC work, so a
  // batch of 20 answered on one thread kept the last one waiting ~300 us). `drain`: then also
  // runs queued answers no thread has taken yet.
  void Complete(std::unique_ptr<Unit> unit, bool drain);
  // Complete()s `unit`, then takes it out of the in-flight counts (waking launch threads).
  void Retire(std::unique_ptr<Unit> unit, bool drain);
  // Whether every copy of `unit` (planned) is a device copy (also when it has none).
  static bool OnlyDeviceCopies(const Unit& unit);
  // Whether `unit` copies at most options_.watcher_completion_bytes out of staging or answers
  // that many bytes inline (then it is completed on the watcher).
  bool QuickToComplete(const Unit& unit) const;
  // Answers queued by Complete() that no thread has taken yet: runs them on this thread.
  void DrainAnswers();
  // CUDA host function completing a unit that has no completion event to poll.
  static void HostCallback(void* unit);
  // EventWatcher's callback: the unit's last event completed (or its query failed).
  static void EventDone(void* unit, cudaError_t result);
  // Phases of a unit's host time (RunUnit, then completion), logged at Join.
  enum Phase : int {
    kPrepare,         // kernel choice, resident B ready, plan, kernel calls prepared
    kAllocate,        // device pool, staging, second plan pass
    kStageIn,         // request bytes into staging (the launch thread's share and its wait)
    kStreamLock,      // waiting for the unit stream's enqueue lock
    kH2D,             // timing events and the H2D copies enqueued
    kKernels,         // compute stream lock (serial kernels) and the kernel launches
    kD2H,             // D2H copies, free, host function or watch
    kToCompletion,    // from the GPU finishing to the completing thread picking the unit up
    kCompletionWork,  // timing, copies out of staging, frees, answers built
    kAnswers,         // answers handed to their callers (the service sends them)
    kPhases
  };
  // Adds the time since `*mark` to `phase`; *mark = now.
  void Mark(Phase phase, absl::Time* mark);
  // Moves `d`, already counted in `from`, to `to`.
  void MovePhaseTime(Phase from, Phase to, absl::Duration d);
  // Logs the mean time per unit of each phase (at Join).
  void LogPhases() const;
  // Runs `jobs` on the copier, or on the calling thread without one. Returns the jobs that
  // touched a vanished page of a client's shared memory (see HostCopier::Copy).
  [[nodiscard]] std::vector<size_t> HostCopy(std::span<const CopyJob> jobs);
  // Copies `u`'s results out of staging into the responses (those not sent from their own
  // pinned block) and the shared-memory outputs that are not page-locked. One status per item:
  // FAILED_PRECONDITION for an item whose output's shared-memory object was shrunk under it,
  // else OK.
  std::vector<absl::Status> CopyOut(Unit& u);
  // Whether the response's copy `o` of `u` landed in the unit's own answer block (sent from
  // there, not copied out).
  static bool SentFromPinned(const Unit& u, const OutCopy& o);
  // Gives each result of `u` sent from its answer block a view of its bytes there and the owner
  // of its part of the block.
  void HandOutAnswers(Unit& u);

  const std::shared_ptr<DeviceContext> device_;
  StagingPool* const staging_;
  PinnedAnswers* const pinned_answers_;
  HostCopier* const copier_;
  const ExecutorOptions options_;
  const double max_work_us_;  // options_.max_work_in_flight_ms_per_device in microseconds
  std::vector<std::thread> pullers_;
  std::vector<std::thread> completers_;
  std::unique_ptr<EventWatcher> watcher_;
  // Time spent per Phase, summed over units (nanoseconds).
  std::array<std::atomic<int64_t>, kPhases> phase_ns_{};
  std::atomic<int64_t> units_timed_{0};
  std::atomic<uint64_t> timing_count_{0};  // units launched, for ExecutorOptions::gpu_timing_every
  mutable absl::Mutex mu_;
  std::deque<Unit*> done_queue_ ABSL_GUARDED_BY(mu_);
  std::deque<std::function<void()>> answers_ ABSL_GUARDED_BY(mu_);
  absl::CondVar work_cv_;  // signalled when done_queue_ or answers_ grows, or all work is over
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  double work_in_flight_us_ ABSL_GUARDED_BY(mu_) = 0;  // estimated, of the units in flight
  int pulling_ ABSL_GUARDED_BY(mu_) = 0;  // launch threads holding a slot for the batch they pull
  absl::CondVar slot_cv_;                 // signalled when a unit completes (in_flight_ drops)
  int pullers_done_ ABSL_GUARDED_BY(mu_) = 0;
  // For the source's idle dispatch (core::WorkSource::DeviceIdle): batches taken from it, and
  // units counted in flight whose GPU work is not over. A batch's units are counted before the
  // batch, and idle is reported with the batch count read before the pending units are checked,
  // so a report never covers a batch whose units it did not count (the source ignores reports
  // whose count is not its own).
  std::atomic<uint64_t> batches_taken_{0};
  std::atomic<int64_t> gpu_pending_{0};
  core::WorkSource* source_ = nullptr;
  bool started_ = false;
};

}  // namespace gemm::gpu
