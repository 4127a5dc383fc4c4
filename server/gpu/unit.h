// A unit: the requests one or a few kernel-library calls serve together on one stream (a
// coalesced stack sharing a resident B, a strided batch, a group, expert groups), with its plan
// (copies in and out, launches; server/gpu/unit_plan.h) and, once running, the device memory,
// staging, events and timing it holds. Shared by the executor and the planner.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gemm/kernel.h"
#include "server/core/types.h"
#include "server/gpu/device_context.h"
#include "server/gpu/pinned_answers.h"
#include "server/gpu/unit_memory.h"

namespace gemm::gpu {

class Executor;

// One host->device 2D copy: `rows` rows of `row_bytes` contiguous host bytes into a device region
// with row pitch `dpitch`, through staging bytes at `stage_off`, or straight from `host` when it
// is page-locked (a registered shared-memory region). Bytes that arrived in pieces (a request
// message's buffers) have `host` null and are copied into staging from `pieces`, in order, or,
// when `pinned` (received into the pinned heap), read in place by the copy kernel of
// device_copy.h.
struct InCopy {
  const char* host = nullptr;
  absl::Span<const absl::string_view> pieces;
  int64_t rows = 0, row_bytes = 0, dev_off = 0, dpitch = 0, stage_off = 0;
  bool pinned = false;
  bool device = false;  // `host` is a device address (a CUDA IPC region; pinned too)
};

// One device->host 2D copy of a whole output (item `item`, output `output`): into `dest` (the
// problem's shared-memory D; written directly when `pinned`, else through staging at
// `stage_off`), or, for the response, into the unit's answer region at `answer_off`.
struct OutCopy {
  size_t item = 0, output = 0;
  int64_t dev_off = 0, dpitch = 0, rows = 0, row_bytes = 0, stage_off = -1;
  char* dest = nullptr;
  bool pinned = false;
  bool device = false;      // `dest` is a device address (a CUDA IPC region; pinned too)
  int64_t answer_off = -1;  // in the answer region (an answer sent inline), else -1
};

// One kernel-library call.
struct Launch {
  bool grouped = false;
  kernel::StridedBatch batch;
  std::vector<kernel::Problem> group;
  // A single call's host work (kernel::Prepare), done before the unit's copy-in is enqueued so
  // that only its enqueue follows the copy; its error is the call's. Not used by groups.
  absl::StatusOr<kernel::PreparedGemm> prepared = absl::InternalError("kernel call not prepared");
  kernel::KernelKind served = kernel::KernelKind::kAuto;  // the call's LaunchOptions::served
};

enum class UnitShape { kStacked, kStrided, kGroup, kExperts };

// A group of items run by one or a few kernel calls on one stream, with one device allocation
// and one staging block. Owned by the executor thread until enqueued, then by the host callback
// and completion thread.
struct Unit {
  Executor* owner = nullptr;
  std::vector<std::shared_ptr<core::WorkItem>> items;
  UnitShape shape = UnitShape::kStacked;
  absl::Time released;
  bool high_priority = false;
  kernel::KernelKind kind = kernel::KernelKind::kAuto;
  std::string kernel_name;
  int64_t batch_rows = 0;
  double est_us = 0;  // estimated GPU time, counted in the executor's work in flight

  // Plan (offsets relative to the device allocation / staging block).
  std::vector<InCopy> ins;
  std::vector<OutCopy> outs;
  std::vector<Launch> launches;
  std::vector<std::vector<core::Output>> outputs;  // per item
  int64_t device_bytes = 0;
  int64_t staging_bytes = 0;    // operands and shared-memory results through staging
  int64_t answer_bytes = 0;     // the answer region: the results sent inline
  int64_t workspace_bytes = 0;  // the largest any launch needs
  int64_t workspace_off = -1;   // in the device allocation; -1: the stream's own workspace

  // Resources.
  const StreamSlot* slot = nullptr;   // copies (and kernels unless kslot differs)
  const StreamSlot* kslot = nullptr;  // kernels: slot, or the device's compute stream
  PoolAllocation dev;    // device memory: operands, outputs, workspace (returned on destruction)
  StagingLease staging;  // pinned staging for the copies through it (returned on destruction)
  // The answer region in a pinned block of its own, its parts sent with the answers; when empty,
  // the answer region follows the staging_bytes of `staging` and the answers are copied out.
  AnswerBlock answers;
  bool direct = false;  // operands too large for a staging block: copied from pageable memory
  // The direct path's copies of operands that arrived in pieces, gathered into one range each.
  std::vector<std::string> gathered;
  // Timing: before H2D, after H2D, after the kernels, after D2H; and (kernels on the compute
  // stream) when the compute stream reached this unit's kernels.
  cudaEvent_t ev[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  bool timed = false;
  bool sampled = true;          // records its timing events (else only ev[3]; gpu_timing_every)
  bool gpu_pending = false;     // counted in the executor's gpu_pending_ (until GpuDone)
  absl::Duration host_copy_in;  // memcpy into staging (part of copy_in)
  absl::Duration launch;        // host time planning and enqueuing (Timing::launch)
  absl::Time gpu_done;          // when the stream callback ran
  absl::Status status;

  // Where the D2H copy `o` (through pinned memory, not the direct path) lands.
  char* Landing(const OutCopy& o) const {
    if (o.answer_off < 0) return staging.ptr() + o.stage_off;
    return (answers.held() ? answers.ptr() : staging.ptr() + staging_bytes) + o.answer_off;
  }
};

}  // namespace gemm::gpu
