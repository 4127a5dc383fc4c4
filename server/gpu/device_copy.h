// Copies into device memory by one kernel launch instead of the driver's copy calls, for two kinds
// of source the copy engine serves badly:
// - a client's GPU memory mapped through CUDA IPC: cudaMemcpyBatchAsync and cudaMemcpy2DAsync
//   spent ~4-5 us of host time per IPC-mapped pointer (H100, CUDA 13.0), ~50 us each way for a
//   unit of 12 requests, which the copy on the stream waited for;
// - the pieces a request's A was received in (page-locked host memory, the pinned heap of
//   pinned_arena.h), which the GPU reads over the bus itself: a 256 KiB operand arrives in five
//   or more pieces of at most 64 KiB, and the copy engine costs ~2-3 us per copy whatever its
//   size, so one DMA copy per piece made a coalesced unit's copy-in several times longer than
//   its bytes need.
#pragma once

#include <cuda_runtime_api.h>

#include <span>

#include "absl/status/status.h"
#include "server/gpu/copy_batch.h"

namespace gemm::gpu {

// Enqueues `copies` on `stream` as kernel launches (one per 80 copies). Destinations are device
// memory of the current device or mapped into it; sources are that, or page-locked host memory
// registered with CUDA. Any alignment of addresses, pitches and widths: 16-byte accesses where
// all of them allow, else aligned 16-byte loads shifted into aligned 16-byte stores, row by row.
// Reads may touch the bytes just before and after a row within its 16-byte-aligned blocks (the
// same page). Copies in one call must not overlap.
absl::Status EnqueueDeviceCopies(std::span<const Copy2D> copies, cudaStream_t stream);

}  // namespace gemm::gpu
