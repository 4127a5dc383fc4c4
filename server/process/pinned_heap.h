// The heap grown into a pinned arena: with tcmalloc, the memory malloc takes from the system
// comes from a gpu::PinnedArena while it lasts, then from the system as before. Buffers gRPC
// receives messages into are then mostly page-locked, and the CUDA backend copies a request's A
// to the GPU straight out of them.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"

namespace gemm::server {

// Makes a pinned arena of `bytes` (gpu::PinnedArena::Create's errors) and has tcmalloc grow its
// heap into it from now on, falling back to its own system allocator once the arena is spent.
// Returns the arena's size. UNIMPLEMENTED in a build without tcmalloc. Call once, after the CUDA
// backend is up and before the gRPC server starts.
absl::StatusOr<int64_t> StartPinnedHeap(int64_t bytes);

}  // namespace gemm::server
