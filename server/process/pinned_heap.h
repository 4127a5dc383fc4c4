// The heap grown into a pinned arena: with tcmalloc, the memory malloc takes from the system
// comes from a gpu::PinnedArena while it lasts, then from the system as before. Buffers gRPC
// receives messages into are then mostly page-locked, and the GPU reads a request's A straight
// out of them (device_copy.h).
// NOTE: tcmalloc ends a release round at the first free span whose pages it cannot release, and
// the arena's pages cannot be released (they are locked), so while free arena spans exist, free
// memory outside the arena is returned to the system less often.
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
