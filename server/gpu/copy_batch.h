// Enqueuing a unit's host<->device copies: contiguous copies go out in one cudaMemcpyBatchAsync
// call instead of one CUDA call each (a coalesced batch of N requests has N copies each way).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <vector>

#include "absl/status/status.h"

namespace gemm::gpu {

// One 2D copy: `rows` rows of `width` bytes, `spitch` / `dpitch` bytes apart.
struct Copy2D {
  void* dst = nullptr;
  size_t dpitch = 0;
  const void* src = nullptr;
  size_t spitch = 0;
  size_t width = 0;
  size_t rows = 0;
};

// Merges, in place and in order, each run of copies that continue one another on both sides
// (each one contiguous, and its source and destination starting where the previous one's end)
// into one copy. A coalesced unit's stacked rows are laid out that way on the device and in
// staging, so its N per-request copies each way become one: a copy costs the copy engine a few
// microseconds whatever its size. Returns how many copies were merged away.
size_t MergeAdjacentCopies(std::vector<Copy2D>& copies);

// Enqueues `copies` (all of direction `kind`) on `stream`, in stream order with the work around
// them. `batched`: contiguous copies (one row, or both pitches equal to the width) are submitted
// with cudaMemcpyBatchAsync (falling back to one call per copy if the driver refuses it); pitched
// ones always take cudaMemcpy2DAsync. Copies in one call must not depend on each other.
absl::Status EnqueueCopies(std::span<const Copy2D> copies, cudaMemcpyKind kind, cudaStream_t stream,
                           bool batched);

}  // namespace gemm::gpu
