// PinnedArena: one range of host memory, locked and registered with CUDA at start-up, that the
// process's allocator grows its heap into (server/process/pinned_heap.h). What the heap hands
// out from it is already pinned, the buffers gRPC receives request messages into included, so
// the GPU copies a request's A straight out of the message instead of out of a copy of it
// (request_pinning.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace gemm::gpu {

class PinnedArena {
 public:
  PinnedArena(const PinnedArena&) = delete;
  PinnedArena& operator=(const PinnedArena&) = delete;

  // The process's one arena of `bytes` (rounded up to 2 MiB), made once and never freed: mapped,
  // locked in memory (mlock) and registered with CUDA for every GPU. Locking is what keeps it
  // safe: the kernel refuses to drop locked pages (madvise fails), so an allocator releasing
  // free heap memory cannot unmap a page the GPU copies from. FAILED_PRECONDITION when the pages
  // cannot be locked (RLIMIT_MEMLOCK; `ulimit -l` or CAP_IPC_LOCK), or an arena exists.
  static absl::StatusOr<PinnedArena*> Create(int64_t bytes);

  // The next `size` bytes at a multiple of `alignment` (a power of two), or nullptr when the
  // arena is spent. Thread-safe and lock-free (the allocator calls it under its own lock).
  void* Take(size_t size, size_t alignment);

  // Whether [p, p + n) lies wholly in the process's arena (false without one).
  static bool Holds(const void* p, size_t n);
  // The process's arena, or null without one.
  static const PinnedArena* Get();

  int64_t bytes() const { return static_cast<int64_t>(end_ - base_); }
  // Bytes handed out so far.
  int64_t taken_bytes() const;

 private:
  PinnedArena(char* base, char* end) : base_(base), end_(end), next_(base) {}

  char* const base_;
  char* const end_;
  std::atomic<char*> next_;
};

}  // namespace gemm::gpu
