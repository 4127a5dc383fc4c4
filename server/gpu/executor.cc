// Executor of one GPU (see executor.h): batch -> units -> plan (unit_plan.h) -> pool/staging ->
// stream work -> host callback or polled event -> completion thread.
#include "server/gpu/executor.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/guarded_copy.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "common/uninitialized_string.h"
#include "gemm/kernel.h"
#include "server/core/answer_batch.h"
#include "server/core/shared_memory_registry.h"
#include "server/gpu/copy_batch.h"
#include "server/gpu/cuda_util.h"
#include "server/gpu/device_copy.h"
#include "server/gpu/resident.h"
#include "server/gpu/unit.h"
#include "server/gpu/unit_plan.h"

namespace gemm::gpu {

Executor::Executor(std::shared_ptr<DeviceContext> device, StagingPool* staging, HostCopier* copier,
                   Config config)
    : device_(std::move(device)), staging_(staging), copier_(copier), config_(Normalized(config)) {}

Executor::Config Executor::Normalized(Config c) {
  c.launch = std::max(1, c.launch);
  c.completion = std::max(1, c.completion);
  c.max_in_flight = std::max(0, c.max_in_flight);
  c.idle_units = std::max(0, c.idle_units);
  c.max_work_in_flight_us = std::max(0.0, c.max_work_in_flight_us);
  return c;
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
  // NOTE: several of each. Measured on the H200 (decode M=16, 64 callers, --shm): with one of
  // each, the completion thread was the limit when batching (1.2 ms from the GPU finishing to
  // completion; 22.9k req/s) and the launch thread without (~60 us of CUDA calls per unit; 11.4k
  // req/s); 4 launch + 8 completion threads: 30.0k and 17.9k req/s.
  for (int i = 0; i < config_.completion; ++i) {
    completers_.emplace_back([this] {
      SetCurrentThreadName(absl::StrCat("gemm-done-", device_->ordinal()));
      CompletionLoop();
    });
  }
  if (config_.poll_completion) {
    watcher_ = std::make_unique<EventWatcher>(device_->ordinal(),
                                              absl::StrCat("gemm-poll-", device_->ordinal()));
  }
  for (int i = 0; i < config_.launch; ++i) {
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

void Executor::LogPhases() const {
  static constexpr const char* kNames[kPhases] = {
      "prepare+plan", "allocate+stage", "stream lock",   "events+H2D",
      "kernels",      "D2H+free+hand",  "to completion", "completion work"};
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
  if (++pullers_done_ == config_.launch && in_flight_ == 0) work_cv_.SignalAll();  // all exit
}

bool Executor::MayPullLocked() const {
  if (config_.max_in_flight > 0 && in_flight_ + pulling_ >= config_.max_in_flight) return false;
  // The work bound lets one thread pull at a time: a batch's size is known only once pulled.
  // Below two units in flight it does not hold, so that the next unit's copies always overlap
  // the current one's kernels, however long the units are.
  if (config_.max_work_in_flight_us > 0 &&
      (pulling_ > 0 || (work_in_flight_us_ >= config_.max_work_in_flight_us && in_flight_ >= 2))) {
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
  if (config_.max_work_in_flight_us > 0) {
    unit.est_us = EstimateUs(unit);
    work_in_flight_us_ += unit.est_us;
  }
}

void Executor::RunBatch(core::Batch batch) {
  const absl::Time now = absl::Now();
  // Coalescable items keyed by (B, dtype, kernel), expert groups by (dtype, kernel); the rest run
  // alone.
  std::map<std::tuple<const void*, int, std::string>, size_t> stack_of;
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
    const bool experts = core::IsExpertGroup(item->request);
    if (Coalescable(*item) || experts) {
      // Expert groups share one unit per (dtype, kernel), whatever matrices they name.
      const core::Problem& p = item->request.problems[0];
      auto key = std::make_tuple(experts ? nullptr : static_cast<const void*>(p.b_resident.get()),
                                 static_cast<int>(p.out_dtype), item->request.kernel);
      auto [it, inserted] = stack_of.try_emplace(key, units.size());
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
  const int ordinal = device_->ordinal();
  auto fail = [&](absl::Status st) {
    u->status = std::move(st);
    Enqueued(u.release());
  };

  // Kernel: "" / "auto" = the device's serving kernel; else an explicit, usable one.
  const std::string& want = u->items[0]->request.kernel;
  if (want.empty() || want == "auto") {
    u->kind =
        device_->selected_usable() ? kernel::KernelKind::kAuto : kernel::KernelKind::kCublasLt;
    u->kernel_name = kernel::KernelName(device_->serving());
  } else if (want == kernel::KernelName(kernel::KernelKind::kCublasLt)) {
    u->kind = kernel::KernelKind::kCublasLt;
    u->explicit_kernel = true;
    u->kernel_name = want;
  } else if (want == kernel::KernelName(device_->selected())) {
    if (!device_->selected_usable()) {
      return fail(absl::FailedPreconditionError(
          absl::StrCat("kernel ", want, " failed its start-up self-test on device ", ordinal,
                       " and is disabled: ", device_->self_test_detail())));
    }
    u->kind = device_->selected();
    u->explicit_kernel = true;
    u->kernel_name = want;
  } else if (want == kernel::KernelName(kernel::KernelKind::kSm90) ||
             want == kernel::KernelName(kernel::KernelKind::kSm100)) {
    return fail(absl::FailedPreconditionError(
        absl::StrCat("kernel ", want, " cannot run on device ", ordinal, " (compute capability ",
                     device_->cc_major(), ".", device_->cc_minor(), ")")));
  } else {
    return fail(absl::InvalidArgumentError(absl::StrCat("unknown kernel \"", want, "\"")));
  }

  // Resident B matrices must have finished uploading (waits on this thread only).
  for (const auto& item : u->items) {
    for (const core::Problem& p : item->request.problems) {
      if (const auto* m = dynamic_cast<const CudaResidentMatrix*>(p.b_resident.get())) {
        absl::Status st = m->WaitReady();
        if (!st.ok()) {
          return fail(absl::Status(
              st.code(), absl::StrCat("resident matrix ", m->desc().handle, ": ", st.message())));
        }
      }
    }
  }

  u->slot = &device_->NextStream(u->high_priority);
  const StreamSlot* compute =
      config_.serial_kernels ? device_->ComputeStream(u->high_priority) : nullptr;
  u->kslot = compute != nullptr ? compute : u->slot;
  cudaStream_t stream = u->slot->stream;  // the compute stream's, for device operands (below)
  if (absl::Status st = BuildPlan(*u, 0, ordinal, /*measure=*/true); !st.ok()) {
    // Several coalesced items: one bad item must not fail the others.
    if (u->items.size() > 1 && absl::IsInvalidArgument(st)) {
      RunItemsAlone(u.get());
      return fail(absl::OkStatus());
    }
    return fail(st);
  }
  if (compute != nullptr && config_.device_units_on_compute_stream && OnlyDeviceCopies(*u)) {
    u->slot = compute;
    stream = compute->stream;
  }
  if (u->items.size() > 1 && u->staging_bytes > staging_->max_block_bytes()) {
    // Coalesced past a staging slab: the direct path would copy from pageable memory, which
    // holds this thread for the whole transfer. Each item alone fits in staging (or takes the
    // direct path on its own, if it is that large by itself).
    RunItemsAlone(u.get());
    return fail(absl::OkStatus());
  }

  Mark(Phase::kPrepare, &mark);
  absl::StatusOr<void*> dev = device_->pool().Allocate(u->device_bytes, stream);
  if (!dev.ok()) {
    if (u->items.size() > 1 && absl::IsResourceExhausted(dev.status())) {
      // The batch as a whole does not fit: run its items one by one.
      RunItemsAlone(u.get());
      return fail(absl::OkStatus());
    }
    return fail(dev.status());
  }
  u->dev = static_cast<char*>(*dev);
  u->dev_accounted = u->device_bytes;

  u->direct = u->staging_bytes > staging_->max_block_bytes();
  if (!u->direct && u->staging_bytes > 0) {
    absl::StatusOr<StagingBlock> block = staging_->Allocate(u->staging_bytes);
    if (!block.ok()) {
      (void)device_->pool().FreeAsync(u->dev, stream);
      u->dev = nullptr;
      return fail(block.status());
    }
    u->staging = *block;
  }
  if (absl::Status st = BuildPlan(*u, reinterpret_cast<uintptr_t>(u->dev), ordinal, false);
      !st.ok()) {
    (void)device_->pool().FreeAsync(u->dev, stream);
    u->dev = nullptr;
    return fail(st);
  }
  if (u->direct) {  // results land straight in the outputs
    for (const OutCopy& o : u->outs) {
      if (o.dest == nullptr)
        ResizeUninitialized(&u->outputs[o.item][o.output].data, o.rows * o.row_bytes);
    }
  } else {
    const absl::Time t0 = absl::Now();
    std::vector<CopyJob> jobs;
    jobs.reserve(u->ins.size());
    for (const InCopy& in : u->ins) {
      if (in.pinned) continue;  // the device copy reads it in place
      jobs.push_back(
          {u->staging.ptr + in.stage_off, in.host, static_cast<size_t>(in.rows * in.row_bytes)});
    }
    const std::vector<size_t> faulted = HostCopy(jobs);
    u->host_copy_in = absl::Now() - t0;
    if (!faulted.empty()) {
      // A client shrank a shared-memory object under an operand. Nothing is enqueued yet: give
      // the memory back, and fail the item alone (the others run without it).
      staging_->Free(u->staging);
      u->staging = {};
      (void)device_->pool().FreeAsync(u->dev, stream);
      u->dev = nullptr;
      if (u->items.size() > 1) {
        RunItemsAlone(u.get());
        return fail(absl::OkStatus());
      }
      return fail(
          core::SharedMemoryRegistry::ShrunkError(u->items[0]->request, jobs[faulted[0]].src));
    }
  }

  // Enqueue: events, H2D, kernels, D2H, free, callback. Once anything is enqueued, the unit is
  // only released by the stream (callback), so buffers the copies read stay valid.
  // NOTE: under the stream's enqueue lock, so no other unit's work lands in between (the stream's
  // workspace is shared, and the timing events must bracket this unit's work alone).
  Mark(Phase::kAllocate, &mark);
  absl::MutexLock enqueue_lock(u->slot->enqueue_mu.get());
  Mark(Phase::kStreamLock, &mark);
  absl::Status st;
  u->timed = true;
  // The fifth event (when the compute stream reached this unit) only for kernels on it.
  const int events = u->kslot != u->slot ? 5 : 4;
  for (int i = 0; i < events; ++i) {
    auto ev = device_->GetEvent();
    if (!ev.ok()) {
      u->timed = false;
      break;
    }
    u->ev[i] = *ev;
  }
  // Kernels on the compute stream need the events as dependencies; without them, this unit's
  // kernels run on its own stream.
  if (!u->timed) u->kslot = u->slot;
  const cudaStream_t kstream = u->kslot->stream;
  const bool serial = kstream != stream;
  // Only every gpu_timing_every-th unit records its timing events; the others only the last one,
  // which completion polls.
  u->sampled =
      config_.gpu_timing_every <= 1 ||
      timing_count_.fetch_add(1, std::memory_order_relaxed) % config_.gpu_timing_every == 0;
  auto record = [&](int i, cudaStream_t s) {
    if (u->timed && st.ok() && (u->sampled || i == 3)) {
      absl::Status rs = CudaStatus(cudaEventRecord(u->ev[i], s), "cudaEventRecord");
      if (!rs.ok()) u->timed = false;
    }
  };
  record(0, stream);
  std::vector<Copy2D> copies;
  std::vector<Copy2D> device_copies;  // from a client's GPU memory (CUDA IPC): by our kernel
  copies.reserve(std::max(u->ins.size(), u->outs.size()));
  for (const InCopy& in : u->ins) {
    const void* src = u->direct || in.pinned
                          ? static_cast<const void*>(in.host)
                          : static_cast<const void*>(u->staging.ptr + in.stage_off);
    (in.device ? device_copies : copies)
        .push_back({u->dev + in.dev_off, static_cast<size_t>(in.dpitch), src,
                    static_cast<size_t>(in.row_bytes), static_cast<size_t>(in.row_bytes),
                    static_cast<size_t>(in.rows)});
  }
  // Pageable memory (the direct path) keeps one call per copy.
  const bool batched = config_.batched_copies && !u->direct;
  if (config_.merge_copies) {
    MergeAdjacentCopies(copies);
    MergeAdjacentCopies(device_copies);
  }
  if (st.ok()) st = EnqueueCopies(copies, cudaMemcpyHostToDevice, stream, batched);
  if (st.ok()) st = EnqueueDeviceCopies(device_copies, stream);
  Mark(Phase::kH2D, &mark);
  {
    // NOTE: the compute stream's lock too (taken after the copy stream's, always in this order):
    // its workspace is shared, so one unit's kernels go onto it back to back.
    std::optional<absl::MutexLock> kernel_lock;
    if (serial) {
      kernel_lock.emplace(u->kslot->enqueue_mu.get());
      if (st.ok()) {
        st = CudaStatus(cudaEventRecord(u->ev[1], stream), "cudaEventRecord");
      }
      if (st.ok()) st = CudaStatus(cudaStreamWaitEvent(kstream, u->ev[1]), "cudaStreamWaitEvent");
      record(4, kstream);
    } else {
      record(1, stream);
    }
    for (const Launch& l : u->launches) {
      if (!st.ok()) break;
      kernel::LaunchOptions opts;
      opts.kind = u->kind;
      opts.usable_variants = device_->usable_variants();
      if (u->workspace_off >= 0) {
        opts.workspace = u->dev + u->workspace_off;
        opts.workspace_bytes = u->workspace_bytes;
      } else {
        opts.workspace = u->kslot->workspace;
        opts.workspace_bytes = u->kslot->workspace_bytes;
      }
      auto run = [&] {
        return l.grouped ? kernel::GemmGrouped(l.group, kstream, opts)
                         : kernel::Gemm(l.batch, kstream, opts);
      };
      st = run();
      if (absl::IsUnimplemented(st) && !u->explicit_kernel &&
          opts.kind != kernel::KernelKind::kCublasLt) {
        // The native kernel does not cover this call: serve it through cuBLASLt.
        opts.kind = kernel::KernelKind::kCublasLt;
        if (u->workspace_off < 0) {
          opts.workspace = u->kslot->workspace;
          opts.workspace_bytes = u->kslot->workspace_bytes;
        }
        st = run();
        u->kernel_name = kernel::KernelName(kernel::KernelKind::kCublasLt);
      }
    }
    if (serial) {
      // The copy stream (D2H, the free, the callback) goes on after this unit's kernels, also
      // when one failed to launch: the buffers must outlive whatever was enqueued.
      absl::Status ks = CudaStatus(cudaEventRecord(u->ev[2], kstream), "cudaEventRecord");
      if (ks.ok()) ks = CudaStatus(cudaStreamWaitEvent(stream, u->ev[2]), "cudaStreamWaitEvent");
      if (!ks.ok()) {
        GEMM_LOG(ERROR) << "device " << ordinal << ": " << ks
                        << "; synchronizing the compute stream";
        (void)cudaStreamSynchronize(kstream);
        if (st.ok()) st = ks;
      }
    } else {
      record(2, stream);
    }
  }
  Mark(Phase::kKernels, &mark);
  copies.clear();
  device_copies.clear();
  for (const OutCopy& o : u->outs) {
    void* dst = o.pinned            ? static_cast<void*>(o.dest)
                : !u->direct        ? static_cast<void*>(u->staging.ptr + o.stage_off)
                : o.dest != nullptr ? static_cast<void*>(o.dest)
                                    : static_cast<void*>(u->outputs[o.item][o.output].data.data());
    (o.device ? device_copies : copies)
        .push_back({dst, static_cast<size_t>(o.row_bytes), u->dev + o.dev_off,
                    static_cast<size_t>(o.dpitch), static_cast<size_t>(o.row_bytes),
                    static_cast<size_t>(o.rows)});
  }
  if (config_.merge_copies) {
    MergeAdjacentCopies(copies);
    MergeAdjacentCopies(device_copies);
  }
  if (st.ok()) st = EnqueueCopies(copies, cudaMemcpyDeviceToHost, stream, batched);
  if (st.ok()) st = EnqueueDeviceCopies(device_copies, stream);
  record(3, stream);
  if (!st.ok()) u->timed = false;
  u->status = st;
  absl::Status fs = device_->pool().FreeAsync(u->dev, stream);
  if (!fs.ok()) {
    GEMM_LOG(ERROR) << "device " << ordinal << ": " << fs;
    cudaStreamSynchronize(stream);  // error path: cudaFreeAsync failed, free synchronously
    cudaFree(u->dev);
  }
  u->dev = nullptr;
  u->launch = absl::Now() - launch_start;
  Unit* raw = u.release();
  if (watcher_ != nullptr && raw->timed) {
    // ev[3] follows the unit's last copy on `stream`.
    watcher_->Watch(raw->ev[3], &Executor::EventDone, raw);
    Mark(Phase::kD2H, &mark);
    units_timed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  absl::Status cs =
      CudaStatus(cudaLaunchHostFunc(stream, &Executor::HostCallback, raw), "cudaLaunchHostFunc");
  Mark(Phase::kD2H, &mark);
  units_timed_.fetch_add(1, std::memory_order_relaxed);
  if (!cs.ok()) {
    // Cannot be called back: wait here (this executor thread, never a gRPC thread).
    GEMM_LOG(ERROR) << "device " << ordinal << ": " << cs << "; synchronizing the stream";
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
  if (gpu_pending_.fetch_sub(1) - 1 <= config_.idle_units) ReportIfIdle();
}

void Executor::ReportIfIdle() {
  const uint64_t taken = batches_taken_.load();
  if (gpu_pending_.load() > config_.idle_units) return;
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
             !(pullers_done_ == config_.launch && in_flight_ == 0)) {
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
  if (--in_flight_ == 0 && pullers_done_ == config_.launch) work_cv_.SignalAll();  // all exit
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
  if (u.direct || config_.watcher_completion_bytes < 0) return false;
  int64_t bytes = 0;
  for (const OutCopy& o : u.outs) {
    if (!o.pinned) bytes += o.rows * o.row_bytes;
  }
  return bytes <= config_.watcher_completion_bytes;
}

std::vector<absl::Status> Executor::CopyOut(Unit& u) {
  // Size every output first (allocation only: no zero fill, the copy writes every byte), then
  // copy them all in one go on the copier's threads.
  std::vector<CopyJob> jobs;
  std::vector<size_t> job_item;  // the item whose output each job copies
  jobs.reserve(u.outs.size());
  job_item.reserve(u.outs.size());
  for (const OutCopy& o : u.outs) {
    if (o.pinned) continue;  // the device copy wrote it in place
    const size_t bytes = o.rows * o.row_bytes;
    char* dst = o.dest;
    if (dst == nullptr) {
      std::string& data = u.outputs[o.item][o.output].data;
      ResizeUninitialized(&data, bytes);
      dst = data.data();
    }
    jobs.push_back({dst, u.staging.ptr + o.stage_off, bytes});
    job_item.push_back(o.item);
  }
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
    t.copy_out += absl::Now() - t0;  // staging -> response bytes
  }
  t.copy_in += u->host_copy_in;  // request bytes -> staging
  staging_->Free(u->staging);
  u->staging = {};
  if (u->dev_accounted > 0) device_->pool().Release(u->dev_accounted);
  u->dev_accounted = 0;
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
    answers.push_back([done = std::move(done), r = std::move(r), arrival = item->arrival,
                       gpu_done = u->gpu_done]() mutable {
      const absl::Time now = absl::Now();
      if (gpu_done != absl::Time()) r.timing.completion = now - gpu_done;
      r.timing.total = now - arrival;
      done(std::move(r));
    });
  }
  u.reset();
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
