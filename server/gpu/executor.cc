// Executor of one GPU (see executor.h): batch -> units -> plan (unit_plan.h) -> pool/staging ->
// stream work -> polled event (or host callback) -> completion thread.
#include "server/gpu/executor.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/guarded_copy.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/thread_name.h"
#include "common/uninitialized_string.h"
#include "gemm/kernel.h"
#include "gemm/kernel_choice.h"
#include "server/core/answer_batch.h"
#include "server/core/coalescing.h"
#include "server/core/shared_memory_registry.h"
#include "server/gpu/copy_batch.h"
#include "server/gpu/cuda_util.h"
#include "server/gpu/device_copy.h"
#include "server/gpu/resident.h"
#include "server/gpu/unit.h"
#include "server/gpu/unit_memory.h"
#include "server/gpu/unit_plan.h"

namespace gemm::gpu {

Executor::Executor(std::shared_ptr<DeviceContext> device, StagingPool* staging,
                   PinnedAnswers* answers, HostCopier* copier, const ExecutorOptions& options)
    : device_(std::move(device)),
      staging_(staging),
      pinned_answers_(answers),
      copier_(copier),
      options_(Normalized(options)),
      max_work_us_(options_.max_work_in_flight_ms_per_device * 1e3) {}

ExecutorOptions Executor::Normalized(ExecutorOptions o) {
  o.launch_threads_per_device = std::max(1, o.launch_threads_per_device);
  o.completion_threads_per_device = std::max(1, o.completion_threads_per_device);
  o.max_units_in_flight_per_device = std::max(0, o.max_units_in_flight_per_device);
  o.idle_units_per_device = std::max(0, o.idle_units_per_device);
  o.max_work_in_flight_ms_per_device = std::max(0.0, o.max_work_in_flight_ms_per_device);
  return o;
}

std::vector<size_t> Executor::HostCopy(std::span<const CopyJob> jobs) {
  if (copier_ != nullptr) return copier_->Copy(jobs);
  std::vector<size_t> faulted;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!GuardedCopy(jobs[i].dst, jobs[i].src, jobs[i].bytes)) faulted.push_back(i);
  }
  return faulted;
}

Executor::~Executor() { Join(); }

void Executor::Start(core::WorkSource* source) {
  started_ = true;
  source_ = source;
  source_->DeviceIdle(device_->ordinal(), 0);  // nothing taken, nothing in flight
  for (int i = 0; i < options_.completion_threads_per_device; ++i) {
    completers_.emplace_back([this] {
      SetCurrentThreadName(absl::StrCat("gemm-done-", device_->ordinal()));
      CompletionLoop();
    });
  }
  watcher_ = std::make_unique<EventWatcher>(device_->ordinal(),
                                            absl::StrCat("gemm-poll-", device_->ordinal()));
  for (int i = 0; i < options_.launch_threads_per_device; ++i) {
    pullers_.emplace_back([this, source] {
      SetCurrentThreadName(absl::StrCat("gemm-launch-", device_->ordinal()));
      PullLoop(source);
    });
  }
}

void Executor::Join() {
  if (!started_) return;
  for (auto& t : pullers_) {
    if (t.joinable()) t.join();
  }
  if (watcher_ != nullptr) watcher_->Stop();  // hands over the last units
  for (auto& t : completers_) {
    if (t.joinable()) t.join();
  }
  LogPhases();
  started_ = false;  // a second Join() (the destructor's) does nothing
}

void Executor::Mark(Phase phase, absl::Time* mark) {
  const absl::Time now = absl::Now();
  phase_ns_[phase].fetch_add(absl::ToInt64Nanoseconds(now - *mark), std::memory_order_relaxed);
  *mark = now;
}

void Executor::MovePhaseTime(Phase from, Phase to, absl::Duration d) {
  const int64_t ns = absl::ToInt64Nanoseconds(d);
  phase_ns_[from].fetch_sub(ns, std::memory_order_relaxed);
  phase_ns_[to].fetch_add(ns, std::memory_order_relaxed);
}

void Executor::LogPhases() const {
  static constexpr const char* kNames[kPhases] = {
      "prepare+plan", "allocate",      "stage in",      "stream lock",     "events+H2D",
      "kernels",      "D2H+free+hand", "to completion", "completion work", "answers"};
  const int64_t n = units_timed_.load();
  if (n == 0) return;
  std::string line;
  for (int i = 0; i < kPhases; ++i) {
    absl::StrAppend(&line, i == 0 ? "" : ", ", kNames[i], " ",
                    absl::StrFormat("%.1f", phase_ns_[i].load() * 1e-3 / n));
  }
  GEMM_LOG(INFO) << "device " << device_->ordinal() << ": host time per unit over " << n
                 << " units (us): " << line;
}

int64_t Executor::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

void Executor::PullLoop(core::WorkSource* source) {
  absl::Status st = CudaStatus(cudaSetDevice(device_->ordinal()), "cudaSetDevice");
  if (!st.ok()) GEMM_LOG(ERROR) << "executor for device " << device_->ordinal() << ": " << st;
  while (true) {
    if (bounded()) {
      // Hold a slot (pulling_) from here until RunBatch counts the batch's units, so launch
      // threads pulling at once cannot overshoot the bound between them.
      absl::MutexLock lock(&mu_);
      while (!MayPullLocked()) slot_cv_.Wait(&mu_);
      ++pulling_;
    }
    std::optional<core::Batch> batch = source->Next(device_->ordinal());
    if (!batch.has_value()) {
      if (bounded()) {
        absl::MutexLock lock(&mu_);
        --pulling_;
        slot_cv_.SignalAll();  // the others waiting for a slot must see the end too
      }
      break;
    }
    RunBatch(std::move(*batch));
  }
  absl::MutexLock lock(&mu_);
  if (++pullers_done_ == options_.launch_threads_per_device && in_flight_ == 0)
    work_cv_.SignalAll();  // all exit
}

bool Executor::MayPullLocked() const {
  if (options_.max_units_in_flight_per_device > 0 &&
      in_flight_ + pulling_ >= options_.max_units_in_flight_per_device)
    return false;
  // The work bound lets one thread pull at a time: a batch's size is known only once pulled.
  // Below two units in flight it does not hold, so that the next unit's copies always overlap
  // the current one's kernels, however long the units are.
  if (max_work_us_ > 0 &&
      (pulling_ > 0 || (work_in_flight_us_ >= max_work_us_ && in_flight_ >= 2))) {
    return false;
  }
  return true;
}

double Executor::EstimateUs(const Unit& unit) const {
  double flops = 0, bytes = 0;
  // NOTE: a resident B is read once per unit however many of its items name it (coalesced
  // items and expert groups stack their rows on it). Counted per item, a coalesced decode batch
  // of 17 looked 17 times its cost, and a 1 ms bound held the decode load back (H200: 64k
  // against 82k req/s).
  // (Runs under the executor's lock: a linear search over an inline vector, no allocation for up
  // to 16 distinct matrices.)
  absl::InlinedVector<const core::ResidentMatrix*, 16> resident;
  for (const auto& item : unit.items) {
    for (const core::Problem& p : item->request.problems) {
      const double count = static_cast<double>(p.count);
      const double m = static_cast<double>(p.m), n = static_cast<double>(p.n),
                   k = static_cast<double>(p.k);
      const double out = p.out_dtype == core::DType::kFP32 ? 4 : 2;
      flops += 2 * m * n * k * count;
      bytes += count * (2 * m * k + out * m * n);
      if (p.b_resident != nullptr) {
        if (std::find(resident.begin(), resident.end(), p.b_resident.get()) == resident.end()) {
          resident.push_back(p.b_resident.get());
          bytes += 2 * k * n;
        }
      } else {
        // B once per entry only when each entry has its own (inline, not shared).
        bytes += 2 * k * n * (p.b_shared ? 1 : count);
      }
    }
  }
  return std::max(flops / device_->peak_flop_per_us(), bytes / device_->peak_bytes_per_us());
}

void Executor::CountInFlightLocked(Unit& unit) {
  ++in_flight_;
  unit.gpu_pending = true;
  gpu_pending_.fetch_add(1);
  if (max_work_us_ > 0) {
    unit.est_us = EstimateUs(unit);
    work_in_flight_us_ += unit.est_us;
  }
}

void Executor::RunBatch(core::Batch batch) {
  const absl::Time now = absl::Now();
  // Items that coalesce (core::CoalescingKeyOf, the batcher's rule) share one unit per key; the
  // rest run alone.
  absl::flat_hash_map<core::CoalescingKey, size_t> stack_of;
  std::vector<std::unique_ptr<Unit>> units;
  for (auto& item : batch.items) {
    if (item->cancelled && item->cancelled()) {
      item->done(absl::CancelledError("request cancelled before it ran"));
      continue;
    }
    if (item->request.deadline < now) {
      item->done(absl::DeadlineExceededError("deadline passed before the request ran"));
      continue;
    }
    const bool high = item->request.priority == core::Priority::kHigh;
    if (std::optional<core::CoalescingKey> key = core::CoalescingKeyOf(item->request)) {
      const bool experts = key->experts;
      auto [it, inserted] = stack_of.try_emplace(std::move(*key), units.size());
      if (inserted) {
        auto u = std::make_unique<Unit>();
        u->shape = experts ? UnitShape::kExperts : UnitShape::kStacked;
        units.push_back(std::move(u));
      }
      Unit& u = *units[it->second];
      u.items.push_back(std::move(item));
      u.high_priority |= high;
      continue;
    }
    auto u = std::make_unique<Unit>();
    const core::GemmRequest& r = item->request;
    if (r.kind == core::WorkKind::kGroup) {
      u->shape = UnitShape::kGroup;
    } else if (r.kind == core::WorkKind::kBatch ||
               (!r.problems.empty() && r.problems[0].count > 1)) {
      u->shape = UnitShape::kStrided;
    } else {
      u->shape = UnitShape::kStacked;
    }
    u->high_priority = high;
    u->items.push_back(std::move(item));
    units.push_back(std::move(u));
  }
  {
    // The batch's units take over the slot its launch thread held while pulling it.
    absl::MutexLock lock(&mu_);
    for (auto& u : units) CountInFlightLocked(*u);
    batches_taken_.fetch_add(1);  // after its units (see batches_taken_)
    if (bounded()) {
      --pulling_;
      slot_cv_.Signal();  // an empty batch (all items dropped) frees its slot
    }
  }
  ReportIfIdle();  // an empty batch, or (idle_units > 0) still few enough units
  for (auto& u : units) {
    u->released = batch.released;
    RunUnit(std::move(u));
  }
}

void Executor::RunItemsAlone(Unit* u) {
  for (auto& item : u->items) {
    auto one = std::make_unique<Unit>();
    one->shape = u->shape;
    one->high_priority = u->high_priority;
    one->released = u->released;
    one->items.push_back(std::move(item));
    {
      absl::MutexLock lock(&mu_);
      CountInFlightLocked(*one);
    }
    RunUnit(std::move(one));
  }
  u->items.clear();
}

void Executor::RunUnit(std::unique_ptr<Unit> u) {
  const absl::Time launch_start = absl::Now();
  absl::Time mark = launch_start;
  u->owner = this;
  StageResult r = ResolveKernel(*u);
  if (r.ok()) r = WaitForResident(*u);
  if (r.ok()) r = PlanUnit(*u);
  if (!r.ok()) return Abandon(std::move(u), std::move(r));
  Mark(Phase::kPrepare, &mark);
  r = AcquireMemory(*u);
  if (!r.ok()) return Abandon(std::move(u), std::move(r));
  Mark(Phase::kAllocate, &mark);
  MovePhaseTime(Phase::kAllocate, Phase::kStageIn, u->host_copy_in);
  // NOTE: before the copy-in is enqueued, so that only the kernels' enqueue follows it: a device
  // copy (CUDA IPC) finishes in a few microseconds, and the GPU then waited for the rest of the
  // kernel library's host work.
  PrepareLaunches(*u);
  Mark(Phase::kPrepare, &mark);
  EnqueueWork(*u, &mark);
  HandOff(std::move(u), launch_start, &mark);
}

void Executor::Abandon(std::unique_ptr<Unit> u, StageResult r) {
  if (r.items_alone && u->items.size() > 1) {
    RunItemsAlone(u.get());
    r.status = absl::OkStatus();  // the unit ends without items
  }
  u->status = std::move(r.status);
  Enqueued(u.release());
}

Executor::StageResult Executor::ResolveKernel(Unit& u) const {
  absl::StatusOr<kernel::KernelChoice> choice = kernel::ChooseKernel(
      u.items[0]->request.kernel, {.device = device_->ordinal(),
                                   .cc_major = device_->cc_major(),
                                   .cc_minor = device_->cc_minor(),
                                   .selected = device_->selected(),
                                   .selected_usable = device_->selected_usable(),
                                   .self_test_detail = device_->self_test_detail()});
  if (!choice.ok()) return {choice.status()};
  u.kind = choice->kind;
  u.kernel_name = std::move(choice->name);
  return {};
}

Executor::StageResult Executor::WaitForResident(const Unit& u) {
  // Resident B matrices must have finished uploading (waits on this thread only).
  for (const auto& item : u.items) {
    for (const core::Problem& p : item->request.problems) {
      if (const auto* m = dynamic_cast<const CudaResidentMatrix*>(p.b_resident.get())) {
        absl::Status st = m->WaitReady();
        if (!st.ok()) {
          return {absl::Status(
              st.code(), absl::StrCat("resident matrix ", m->desc().handle, ": ", st.message()))};
        }
      }
    }
  }
  return {};
}

Executor::StageResult Executor::PlanUnit(Unit& u) const {
  // Copies on one of the device's streams, kernels on its compute stream: kernels never share
  // the GPU with each other (a persistent kernel sized for all SMs does not wait for half of
  // them) while other units' copies overlap them.
  u.slot = &device_->NextStream(u.high_priority);
  const StreamSlot* compute = &device_->ComputeStream(u.high_priority);
  u.kslot = compute;
  if (absl::Status st = BuildPlan(u, 0, device_->ordinal(), /*measure=*/true); !st.ok()) {
    // Several coalesced items: one bad item must not fail the others.
    return {st, /*items_alone=*/absl::IsInvalidArgument(st)};
  }
  // A unit whose every copy is a device copy (operands and outputs in a client's GPU memory,
  // CUDA IPC) runs wholly on the compute stream (copy kernel in, GEMM, copy kernel out), without
  // the cross-stream events. NOTE: its copy kernels need SMs, which the persistent GEMM before it
  // holds anyway, so on a stream of their own they only waited for it and added two event hops.
  if (OnlyDeviceCopies(u)) u.slot = compute;
  if (u.items.size() > 1 && u.staging_bytes + u.answer_bytes > staging_->max_block_bytes()) {
    // Coalesced past a staging slab: the direct path would copy from pageable memory, which
    // holds this thread for the whole transfer. Each item alone fits in staging (or takes the
    // direct path on its own, if it is that large by itself).
    return {absl::OkStatus(), /*items_alone=*/true};
  }
  return {};
}

Executor::StageResult Executor::AcquireMemory(Unit& u) {
  // Allocated on the stream the unit's copies go on: its free is enqueued there after them.
  absl::StatusOr<PoolAllocation> dev =
      PoolAllocation::Allocate(&device_->pool(), u.device_bytes, u.slot->stream);
  if (!dev.ok()) {
    // The batch as a whole may not fit where its items one by one do.
    return {dev.status(), /*items_alone=*/absl::IsResourceExhausted(dev.status())};
  }
  StagingLease staging;
  AnswerBlock answers;
  // Staging must hold the answer region too when its own block cannot be had.
  u.direct = u.staging_bytes + u.answer_bytes > staging_->max_block_bytes();
  if (!u.direct && u.answer_bytes > 0) answers = pinned_answers_->TryTake(u.answer_bytes);
  const int64_t staging_bytes = u.staging_bytes + (answers.held() ? 0 : u.answer_bytes);
  if (!u.direct && staging_bytes > 0) {
    absl::StatusOr<StagingLease> lease = StagingLease::Allocate(staging_, staging_bytes);
    if (!lease.ok()) return {lease.status()};
    staging = std::move(*lease);
  }
  if (absl::Status st =
          BuildPlan(u, reinterpret_cast<uintptr_t>(dev->get()), device_->ordinal(), false);
      !st.ok()) {
    return {st};
  }
  if (u.direct) {  // operands are read where they are, results land straight in the outputs
    GatherPieces(u);
    for (const OutCopy& o : u.outs) {
      if (o.dest == nullptr)
        ResizeUninitialized(&u.outputs[o.item][o.output].data, o.rows * o.row_bytes);
    }
  } else if (StageResult r = CopyIntoStaging(u, staging.ptr()); !r.ok()) {
    return r;  // nothing enqueued yet: `dev`, `staging` and `answers` return their memory now
  }
  u.dev = std::move(*dev);
  u.staging = std::move(staging);
  u.answers = std::move(answers);
  return {};
}

void Executor::GatherPieces(Unit& u) {
  size_t count = 0;
  for (const InCopy& in : u.ins) count += in.host == nullptr && !in.pieces.empty();
  u.gathered.reserve(count);  // no reallocation below: each `host` stays valid
  for (InCopy& in : u.ins) {
    if (in.host != nullptr || in.pieces.empty()) continue;
    std::string& bytes = u.gathered.emplace_back();
    ResizeUninitialized(&bytes, static_cast<size_t>(in.rows * in.row_bytes));
    size_t off = 0;
    for (absl::string_view piece : in.pieces) {
      std::memcpy(bytes.data() + off, piece.data(), piece.size());
      off += piece.size();
    }
    in.host = bytes.data();
    in.pieces = {};
  }
}

Executor::StageResult Executor::CopyIntoStaging(Unit& u, char* staging) {
  const absl::Time t0 = absl::Now();
  std::vector<CopyJob> jobs;
  jobs.reserve(u.ins.size());
  for (const InCopy& in : u.ins) {
    if (in.pinned) continue;  // the device copy reads it in place
    if (in.host != nullptr || in.pieces.empty()) {
      jobs.push_back(
          {staging + in.stage_off, in.host, static_cast<size_t>(in.rows * in.row_bytes)});
      continue;
    }
    size_t off = 0;  // the pieces a message arrived in, back to back (they sum to rows*row_bytes)
    for (absl::string_view piece : in.pieces) {
      jobs.push_back({staging + in.stage_off + off, piece.data(), piece.size()});
      off += piece.size();
    }
  }
  const std::vector<size_t> faulted = HostCopy(jobs);
  u.host_copy_in = absl::Now() - t0;
  if (faulted.empty()) return {};
  // A client shrank a shared-memory object under an operand: fail that item alone (the others
  // run without it).
  return {core::SharedMemoryRegistry::ShrunkError(u.items[0]->request, jobs[faulted[0]].src),
          /*items_alone=*/true};
}

void Executor::EnqueueWork(Unit& u, absl::Time* mark) {
  // Once anything is enqueued, the unit is only released by the stream (event or callback), so
  // the buffers the copies read stay valid.
  // NOTE: under the stream's enqueue lock, so no other unit's work lands in between (the stream's
  // workspace is shared, and the timing events must bracket this unit's work alone).
  absl::MutexLock enqueue_lock(u.slot->enqueue_mu.get());
  Mark(Phase::kStreamLock, mark);
  TakeEvents(u);
  const cudaStream_t stream = u.slot->stream;
  RecordEvent(u, 0, stream);
  absl::Status st = PreparedStatus(u);  // a unit that cannot launch enqueues no copies either
  if (st.ok()) st = EnqueueCopiesIn(u);
  Mark(Phase::kH2D, mark);
  st = EnqueueKernels(u, std::move(st));
  Mark(Phase::kKernels, mark);
  if (st.ok()) st = EnqueueCopiesOut(u);
  if (st.ok()) RecordEvent(u, 3, stream);
  if (!st.ok()) u.timed = false;
  u.status = st;
  u.dev.FreeAfterWork();
}

void Executor::TakeEvents(Unit& u) {
  u.timed = true;
  // The fifth event (when the compute stream reached this unit) only for kernels on it.
  const int events = u.kslot != u.slot ? 5 : 4;
  for (int i = 0; i < events; ++i) {
    auto ev = device_->GetEvent();
    if (!ev.ok()) {
      u.timed = false;
      break;
    }
    u.ev[i] = *ev;
  }
  // Kernels on the compute stream need the events as dependencies; without them, this unit's
  // kernels run on its own stream.
  if (!u.timed) u.kslot = u.slot;
  // Only every gpu_timing_every-th unit records its timing events; the others only the last one,
  // which completion polls.
  u.sampled =
      options_.gpu_timing_every <= 1 ||
      timing_count_.fetch_add(1, std::memory_order_relaxed) % options_.gpu_timing_every == 0;
}

void Executor::RecordEvent(Unit& u, int i, cudaStream_t stream) {
  if (u.timed && (u.sampled || i == 3)) {
    absl::Status rs = CudaStatus(cudaEventRecord(u.ev[i], stream), "cudaEventRecord");
    if (!rs.ok()) u.timed = false;
  }
}

namespace {

// The pieces of `in` (page-locked, in order) to consecutive bytes at `dst`, one row each.
void AppendPieceCopies(const InCopy& in, char* dst, std::vector<Copy2D>* copies) {
  for (absl::string_view piece : in.pieces) {
    copies->push_back({dst, piece.size(), piece.data(), piece.size(), piece.size(), 1});
    dst += piece.size();
  }
}

}  // namespace

absl::Status Executor::EnqueueCopiesIn(const Unit& u) {
  std::vector<Copy2D> copies;
  // By our kernel: from a client's GPU memory (CUDA IPC), and the pieces of a message received
  // into the pinned heap.
  std::vector<Copy2D> device_copies;
  copies.reserve(u.ins.size());
  for (const InCopy& in : u.ins) {
    if (in.pinned && in.host == nullptr) {  // page-locked pieces, rows back to back (unit_plan)
      AppendPieceCopies(in, u.dev.get() + in.dev_off, &device_copies);
      continue;
    }
    const void* src = u.direct || in.pinned
                          ? static_cast<const void*>(in.host)
                          : static_cast<const void*>(u.staging.ptr() + in.stage_off);
    (in.device ? device_copies : copies)
        .push_back({u.dev.get() + in.dev_off, static_cast<size_t>(in.dpitch), src,
                    static_cast<size_t>(in.row_bytes), static_cast<size_t>(in.row_bytes),
                    static_cast<size_t>(in.rows)});
  }
  return SubmitCopies(u, copies, device_copies, cudaMemcpyHostToDevice);
}

absl::Status Executor::EnqueueCopiesOut(Unit& u) {
  std::vector<Copy2D> copies;
  std::vector<Copy2D> device_copies;  // into a client's GPU memory (CUDA IPC): by our kernel
  copies.reserve(u.outs.size());
  for (const OutCopy& o : u.outs) {
    void* dst = o.pinned            ? static_cast<void*>(o.dest)
                : !u.direct         ? static_cast<void*>(u.Landing(o))
                : o.dest != nullptr ? static_cast<void*>(o.dest)
                                    : static_cast<void*>(u.outputs[o.item][o.output].data.data());
    (o.device ? device_copies : copies)
        .push_back({dst, static_cast<size_t>(o.row_bytes), u.dev.get() + o.dev_off,
                    static_cast<size_t>(o.dpitch), static_cast<size_t>(o.row_bytes),
                    static_cast<size_t>(o.rows)});
  }
  return SubmitCopies(u, copies, device_copies, cudaMemcpyDeviceToHost);
}

absl::Status Executor::SubmitCopies(const Unit& u, std::vector<Copy2D>& copies,
                                    std::vector<Copy2D>& device_copies, cudaMemcpyKind kind) {
  // Copies that continue one another on both sides (a coalesced unit's stacked rows through
  // staging) go out as one copy.
  MergeAdjacentCopies(copies);
  MergeAdjacentCopies(device_copies);
  // Contiguous copies to and from pinned memory go out in one cudaMemcpyBatchAsync call; pageable
  // memory (the direct path) keeps one call per copy.
  const bool batched = !u.direct;
  GEMM_RETURN_IF_ERROR(EnqueueCopies(copies, kind, u.slot->stream, batched));
  return EnqueueDeviceCopies(device_copies, u.slot->stream);
}

absl::Status Executor::EnqueueKernels(Unit& u, absl::Status st) {
  const cudaStream_t stream = u.slot->stream;
  const cudaStream_t kstream = u.kslot->stream;
  if (kstream == stream) {
    if (st.ok()) RecordEvent(u, 1, stream);
    if (st.ok()) st = LaunchKernels(u);
    if (st.ok()) RecordEvent(u, 2, stream);
    return st;
  }
  // NOTE: the compute stream's lock too (taken after the copy stream's, always in this order):
  // its workspace is shared, so one unit's kernels go onto it back to back.
  absl::MutexLock kernel_lock(u.kslot->enqueue_mu.get());
  if (st.ok()) st = CudaStatus(cudaEventRecord(u.ev[1], stream), "cudaEventRecord");
  if (st.ok()) st = CudaStatus(cudaStreamWaitEvent(kstream, u.ev[1]), "cudaStreamWaitEvent");
  if (st.ok()) RecordEvent(u, 4, kstream);
  if (st.ok()) st = LaunchKernels(u);
  // The copy stream (D2H, the free, the completion event) goes on after this unit's kernels,
  // also when one failed to launch: the buffers must outlive whatever was enqueued.
  absl::Status ks = CudaStatus(cudaEventRecord(u.ev[2], kstream), "cudaEventRecord");
  if (ks.ok()) ks = CudaStatus(cudaStreamWaitEvent(stream, u.ev[2]), "cudaStreamWaitEvent");
  if (!ks.ok()) {
    GEMM_LOG(ERROR) << "device " << device_->ordinal() << ": " << ks
                    << "; synchronizing the compute stream";
    (void)cudaStreamSynchronize(kstream);
    if (st.ok()) st = ks;
  }
  return st;
}

kernel::LaunchOptions Executor::LaunchOptionsFor(const Unit& u, kernel::KernelKind* served) const {
  kernel::LaunchOptions opts;
  opts.kind = u.kind;
  opts.usable_variants = device_->usable_variants();  // what start-up qualification passed
  if (u.workspace_off >= 0) {
    opts.workspace = u.dev.get() + u.workspace_off;
    opts.workspace_bytes = u.workspace_bytes;
  } else {
    opts.workspace = u.kslot->workspace;
    opts.workspace_bytes = u.kslot->workspace_bytes;
  }
  // With kAuto, the kernel library itself serves a call its native kernel does not cover (or
  // whose variant did not qualify) through cuBLASLt, and says so: the answer names it.
  *served = u.kind;
  opts.served = served;
  return opts;
}

void Executor::PrepareLaunches(Unit& u) const {
  for (Launch& l : u.launches) {
    if (!l.grouped) l.prepared = kernel::Prepare(l.batch, LaunchOptionsFor(u, &l.served));
  }
}

absl::Status Executor::PreparedStatus(const Unit& u) {
  for (const Launch& l : u.launches) {
    if (!l.grouped && !l.prepared.ok()) return l.prepared.status();
  }
  return absl::OkStatus();
}

absl::Status Executor::LaunchKernels(Unit& u) {
  const cudaStream_t kstream = u.kslot->stream;
  for (Launch& l : u.launches) {
    if (l.grouped) {
      GEMM_RETURN_IF_ERROR(kernel::GemmGrouped(l.group, kstream, LaunchOptionsFor(u, &l.served)));
    } else {
      GEMM_RETURN_IF_ERROR(l.prepared.status());
      GEMM_RETURN_IF_ERROR(kernel::Launch(*l.prepared, kstream));
    }
    if (l.served == kernel::KernelKind::kCublasLt) {
      u.kernel_name = kernel::KernelName(kernel::KernelKind::kCublasLt);
    }
  }
  return absl::OkStatus();
}

void Executor::HandOff(std::unique_ptr<Unit> u, absl::Time launch_start, absl::Time* mark) {
  u->launch = absl::Now() - launch_start;
  const cudaStream_t stream = u->slot->stream;
  Unit* raw = u.release();  // from here on owned by the completion path
  if (watcher_ != nullptr && raw->timed) {
    // ev[3] follows the unit's last copy on `stream`.
    watcher_->Watch(raw->ev[3], &Executor::EventDone, raw);
    Mark(Phase::kD2H, mark);
    units_timed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  absl::Status cs =
      CudaStatus(cudaLaunchHostFunc(stream, &Executor::HostCallback, raw), "cudaLaunchHostFunc");
  Mark(Phase::kD2H, mark);
  units_timed_.fetch_add(1, std::memory_order_relaxed);
  if (!cs.ok()) {
    // Cannot be called back: wait here (this executor thread, never a gRPC thread).
    GEMM_LOG(ERROR) << "device " << device_->ordinal() << ": " << cs
                    << "; synchronizing the stream";
    absl::Status ss = CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (raw->status.ok()) raw->status = ss.ok() ? cs : ss;
    Enqueued(raw);
  }
}

namespace {

// The answers of one unit as tasks for the completion threads: one per answer group (an item
// without a group is a group of its own), in order of first appearance, each running its answers
// inside one AnswerBatch so that the answers bound for one stream leave in one message.
std::vector<std::function<void()>> GroupAnswers(std::vector<std::function<void()>> answers,
                                                const std::vector<const void*>& groups) {
  std::vector<std::vector<std::function<void()>>> members;
  std::vector<const void*> member_group;
  for (size_t i = 0; i < answers.size(); ++i) {
    size_t t = members.size();
    if (groups[i] != nullptr) {
      t = std::find(member_group.begin(), member_group.end(), groups[i]) - member_group.begin();
    }
    if (t == members.size()) {
      members.emplace_back();
      member_group.push_back(groups[i]);
    }
    members[t].push_back(std::move(answers[i]));
  }
  std::vector<std::function<void()>> tasks;
  tasks.reserve(members.size());
  for (auto& m : members) {
    tasks.push_back([m = std::move(m)] {
      core::AnswerBatch batch;
      for (const auto& answer : m) answer();
    });
  }
  return tasks;
}

}  // namespace

void Executor::HostCallback(void* unit) {
  // Runs on CUDA's callback thread: no CUDA calls here, just hand over.
  Unit* u = static_cast<Unit*>(unit);
  u->gpu_done = absl::Now();
  u->owner->Enqueued(u);
}

void Executor::EventDone(void* unit, cudaError_t result) {
  Unit* u = static_cast<Unit*>(unit);
  u->gpu_done = absl::Now();
  if (result != cudaSuccess && u->status.ok()) {
    u->status = CudaStatus(result, "cudaEventQuery (the unit's GPU work)");
  }
  // NOTE: a unit with little to copy out is completed right here on the watcher thread (its
  // first answer too; the others go to the completion threads): handing it over cost ~40 us of
  // wake-up under the decode load over shared memory. Large copy-outs hold up the polling of
  // other units: one 256 KiB D per unit, copied and answered inline on the watcher, bounded
  // decode without batching to ~8k units/s (H200; see watcher_completion_bytes).
  if (u->owner->QuickToComplete(*u)) {
    u->owner->GpuDone(u);
    u->owner->Retire(std::unique_ptr<Unit>(u), /*drain=*/false);
    return;
  }
  u->owner->Enqueued(u);
}

void Executor::GpuDone(Unit* unit) {
  if (!unit->gpu_pending) return;
  unit->gpu_pending = false;
  if (gpu_pending_.fetch_sub(1) - 1 <= options_.idle_units_per_device) ReportIfIdle();
}

void Executor::ReportIfIdle() {
  const uint64_t taken = batches_taken_.load();
  if (gpu_pending_.load() > options_.idle_units_per_device) return;
  source_->DeviceIdle(device_->ordinal(), taken);
}

void Executor::Enqueued(Unit* unit) {
  GpuDone(unit);
  absl::MutexLock lock(&mu_);
  done_queue_.push_back(unit);
  work_cv_.Signal();
}

void Executor::CompletionLoop() {
  absl::Status st = CudaStatus(cudaSetDevice(device_->ordinal()), "cudaSetDevice");
  if (!st.ok()) GEMM_LOG(ERROR) << "completion thread, device " << device_->ordinal() << ": " << st;
  while (true) {
    Unit* u = nullptr;
    {
      absl::MutexLock lock(&mu_);
      // NOTE: a CondVar signalled per queued unit or answer wakes one thread; mu_.Await() had
      // every unlock of mu_ (launch threads count units in flight under it) re-check the
      // condition of all eight waiting threads.
      while (done_queue_.empty() && answers_.empty() &&
             !(pullers_done_ == options_.launch_threads_per_device && in_flight_ == 0)) {
        work_cv_.Wait(&mu_);
      }
      if (!answers_.empty()) {  // answers first: their GPU work is done, they only wait for us
        std::function<void()> answer = std::move(answers_.front());
        answers_.pop_front();
        mu_.Unlock();
        answer();
        mu_.Lock();
        continue;
      }
      if (done_queue_.empty()) return;
      u = done_queue_.front();
      done_queue_.pop_front();
    }
    Retire(std::unique_ptr<Unit>(u), /*drain=*/true);
  }
}

void Executor::Retire(std::unique_ptr<Unit> u, bool drain) {
  GpuDone(u.get());  // where neither the event nor the hand-over did (no-op otherwise)
  const double est_us = u->est_us;
  Complete(std::move(u), drain);
  absl::MutexLock lock(&mu_);
  if (bounded()) {  // else no launch thread ever waits on slot_cv_
    work_in_flight_us_ = std::max(0.0, work_in_flight_us_ - est_us);
    slot_cv_.Signal();
  }
  if (--in_flight_ == 0 && pullers_done_ == options_.launch_threads_per_device)
    work_cv_.SignalAll();  // all exit
}

bool Executor::OnlyDeviceCopies(const Unit& u) {
  for (const InCopy& in : u.ins) {
    if (!in.device) return false;
  }
  for (const OutCopy& o : u.outs) {
    if (!o.device) return false;
  }
  return true;
}

bool Executor::QuickToComplete(const Unit& u) const {
  if (u.direct || options_.watcher_completion_bytes < 0) return false;
  int64_t bytes = 0;
  for (const OutCopy& o : u.outs) {
    // NOTE: results answered from pinned staging count too: no copy, but gRPC's send of that
    // many bytes is the larger cost (~100 us per 256 KiB answer). Completed on the watcher, the
    // inline decode load (16x8192x8192, 64 callers) fell from 21.7k to 13.5k req/s (H200).
    if (!o.pinned) bytes += o.rows * o.row_bytes;
  }
  return bytes <= options_.watcher_completion_bytes;
}

bool Executor::SentFromPinned(const Unit& u, const OutCopy& o) {
  return o.answer_off >= 0 && u.answers.held();
}

void Executor::HandOutAnswers(Unit& u) {
  // The answer offsets grow with the copies' order (the planner lays them out that way): each
  // answer owns its bytes up to the next answer's start, the last one up to the block's end.
  OutCopy* prev = nullptr;
  int64_t answers = 0;
  auto give = [&u](const OutCopy& o, int64_t end) {
    core::Output& out = u.outputs[o.item][o.output];
    out.held = absl::string_view(u.answers.ptr() + o.answer_off,
                                 static_cast<size_t>(o.rows * o.row_bytes));
    out.held_owner = u.answers.Cut(end);
  };
  for (OutCopy& o : u.outs) {
    if (!SentFromPinned(u, o)) continue;
    if (prev != nullptr) give(*prev, o.answer_off);
    prev = &o;
    ++answers;
  }
  if (prev != nullptr) give(*prev, u.answers.bytes());
  pinned_answers_->CountAnswers(answers, 0);
}

std::vector<absl::Status> Executor::CopyOut(Unit& u) {
  // Size every output first (allocation only: no zero fill, the copy writes every byte), then
  // copy them all in one go on the copier's threads.
  std::vector<CopyJob> jobs;
  std::vector<size_t> job_item;  // the item whose output each job copies
  jobs.reserve(u.outs.size());
  job_item.reserve(u.outs.size());
  int64_t copied_answers = 0;
  for (const OutCopy& o : u.outs) {
    if (o.pinned) continue;              // the device copy wrote it in place
    if (SentFromPinned(u, o)) continue;  // sent from where the device copy wrote it
    copied_answers += o.answer_off >= 0;
    const size_t bytes = o.rows * o.row_bytes;
    char* dst = o.dest;
    if (dst == nullptr) {
      std::string& data = u.outputs[o.item][o.output].data;
      ResizeUninitialized(&data, bytes);
      dst = data.data();
    }
    jobs.push_back({dst, u.Landing(o), bytes});
    job_item.push_back(o.item);
  }
  pinned_answers_->CountAnswers(0, copied_answers);
  std::vector<absl::Status> status(u.items.size());
  for (size_t j : HostCopy(jobs)) {
    const size_t item = job_item[j];
    if (status[item].ok()) {
      status[item] = core::SharedMemoryRegistry::ShrunkError(u.items[item]->request, jobs[j].dst);
    }
  }
  return status;
}

void Executor::Complete(std::unique_ptr<Unit> u, bool drain) {
  absl::Time mark = absl::Now();
  const bool counted = u->gpu_done != absl::Time();
  if (counted) {
    phase_ns_[Phase::kToCompletion].fetch_add(absl::ToInt64Nanoseconds(mark - u->gpu_done),
                                              std::memory_order_relaxed);
  }
  core::Timing t;
  if (u->status.ok() && u->timed && u->sampled) {
    float ms[3] = {0, 0, 0};
    // Kernels on the compute stream: from when that stream reached them (not from the end of
    // this unit's copy-in, which may have waited there behind other units' kernels).
    const bool serial = u->kslot != u->slot;
    for (int i = 0; i < 3; ++i) {
      cudaEvent_t from = i == 1 && serial ? u->ev[4] : u->ev[i];
      if (cudaEventElapsedTime(&ms[i], from, u->ev[i + 1]) != cudaSuccess) {
        (void)cudaGetLastError();
        ms[i] = 0;
      }
    }
    t.copy_in = absl::Microseconds(static_cast<double>(ms[0]) * 1e3);
    t.compute = absl::Microseconds(static_cast<double>(ms[1]) * 1e3);
    t.copy_out = absl::Microseconds(static_cast<double>(ms[2]) * 1e3);
  } else {
    t.gpu_timing_skipped = true;
  }
  std::vector<absl::Status> item_status(u->items.size());
  if (u->status.ok() && !u->direct) {
    const absl::Time t0 = absl::Now();
    item_status = CopyOut(*u);
    HandOutAnswers(*u);
    t.copy_out += absl::Now() - t0;  // staging -> response bytes
  }
  t.copy_in += u->host_copy_in;  // request bytes -> staging
  for (cudaEvent_t& e : u->ev) {
    device_->PutEvent(e);
    e = nullptr;
  }
  t.launch = u->launch;
  t.batch_rows = u->batch_rows;
  t.batch_requests = static_cast<int>(u->items.size());
  t.device = device_->ordinal();
  std::vector<std::function<void()>> answers;
  std::vector<const void*> groups;
  answers.reserve(u->items.size());
  groups.reserve(u->items.size());
  for (size_t i = 0; i < u->items.size(); ++i) {
    // Drop the unit's reference to the item (and so to its resident B) before completing it, so
    // whoever is told "done" sees the memory of a released matrix already returned.
    std::shared_ptr<core::WorkItem> item = std::move(u->items[i]);
    groups.push_back(item->answer_group);
    core::DoneCallback done = item->done;
    if (!u->status.ok() || !item_status[i].ok()) {
      answers.push_back(
          [done = std::move(done), st = u->status.ok() ? item_status[i] : u->status] { done(st); });
      continue;
    }
    core::GemmResult r;
    r.outputs = std::move(u->outputs[i]);
    r.kernel = u->kernel_name;
    r.timing = t;
    r.timing.queue = u->released - item->arrival;
    // Total and completion are stamped when the answer goes out (after any wait for a thread).
    answers.push_back([this, done = std::move(done), r = std::move(r), arrival = item->arrival,
                       gpu_done = u->gpu_done]() mutable {
      absl::Time now = absl::Now();
      if (gpu_done != absl::Time()) r.timing.completion = now - gpu_done;
      r.timing.total = now - arrival;
      done(std::move(r));
      if (gpu_done != absl::Time()) Mark(Phase::kAnswers, &now);
    });
  }
  u.reset();  // returns its device memory and staging before any answer goes out
  if (counted) Mark(Phase::kCompletionWork, &mark);
  answers = GroupAnswers(std::move(answers), groups);
  if (answers.empty()) return;
  if (answers.size() > 1) {
    absl::MutexLock lock(&mu_);
    for (size_t i = 1; i < answers.size(); ++i) {
      answers_.push_back(std::move(answers[i]));
      work_cv_.Signal();
    }
  }
  answers[0]();
  if (drain) DrainAnswers();
}

void Executor::DrainAnswers() {
  for (;;) {
    std::function<void()> answer;
    {
      absl::MutexLock lock(&mu_);
      if (answers_.empty()) return;
      answer = std::move(answers_.front());
      answers_.pop_front();
    }
    answer();
  }
}

}  // namespace gemm::gpu
