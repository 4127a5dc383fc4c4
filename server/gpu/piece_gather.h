// Copies pieces of page-locked host memory (a request message received into the pinned heap,
// pinned_arena.h) into device memory by one kernel launch: the GPU reads the host bytes over the
// bus itself. The copy engine costs ~2-3 us per copy whatever its size, and a 256 KiB operand
// arrives in five or more pieces of at most 64 KiB, so one DMA copy per piece made a coalesced
// unit's copy-in several times longer than its bytes need.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>

#include "absl/status/status.h"

namespace gemm::gpu {

// `bytes` bytes from `src` (page-locked host memory registered with CUDA, or device memory;
// any alignment) to `dst` (device memory; any alignment).
struct GatherPiece {
  const char* src = nullptr;
  char* dst = nullptr;
  size_t bytes = 0;
};

// Enqueues `pieces` on `stream` (one launch per 128 pieces). Reads may touch the bytes just
// before and after a piece within its 16-byte-aligned blocks (the same page); destinations must
// not overlap.
absl::Status EnqueueGather(std::span<const GatherPiece> pieces, cudaStream_t stream);

}  // namespace gemm::gpu
