// Reading and writing memory that a client can take away. A page of a MAP_SHARED mapping of a
// client's POSIX shared-memory object raises SIGBUS on access once the client has shrunk the
// object (ftruncate) below it; unguarded, that kills the server. RunGuarded() turns such a fault
// into a return value of the one call that touched the page, so only the request that used the
// region fails.
//
// NOTE: why a SIGBUS guard rather than pread/pwrite on a kept descriptor: operands stay where
// the client put them (the CPU backend decodes them straight from the mapping, the CUDA backend's
// staging copies read them in place and page-locked regions are DMA'd in place), and a region
// costs no descriptor (a registration cap counted in mappings would otherwise also be one in
// descriptors, which run out first). How: one process SIGBUS handler, installed on first use, and
// a jump buffer per thread. A fault on a thread inside RunGuarded() jumps back out of it
// (siglongjmp); any other SIGBUS goes to the handler installed before this one, or takes the
// default action (the process dies, as it would have without this file).
#pragma once

#include <cstddef>

#include "absl/functional/function_ref.h"

namespace gemm {

// Runs `fn` on this thread. Returns true when it finished; false when it touched a page with
// nothing behind it (SIGBUS: a shared mapping past the end of its shrunk object), in which case
// `fn` was abandoned at that access. Because it can be cut off at any instruction, `fn` must
// only load, store and compute: no allocation, no locks, nothing that needs destroying. Nests;
// thread-safe.
bool RunGuarded(absl::FunctionRef<void()> fn);

// std::memcpy(dst, src, bytes) under RunGuarded(): false when a page of either range vanished
// (`dst` then holds unspecified bytes).
bool GuardedCopy(void* dst, const void* src, size_t bytes);

}  // namespace gemm
