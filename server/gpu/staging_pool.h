// Pinned host staging memory shared by all GPUs: a few cudaHostAlloc slabs allocated once at
// start-up, carved with a first-fit free list. Inline operands are memcpy'd into a staging block
// and copied to the device from there (truly asynchronous DMA); results come back the same way.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace gemm::gpu {

// One block of staging memory. Value type; return it with StagingPool::Free(), whole or in parts
// (StagingPool::Part()).
struct StagingBlock {
  char* ptr = nullptr;
  int slab = -1;
  int64_t offset = 0;
  int64_t bytes = 0;
};

class StagingPool {
 public:
  struct Options {
    int64_t total_bytes = 512 << 20;  // pinned bytes in all; default 512 MiB
    int64_t slab_bytes = 128 << 20;   // one cudaHostAlloc; also the largest block. Default 128 MiB
    // false: ordinary (pageable) host memory instead of cudaHostAlloc, for tests of the pool's
    // users on machines without a GPU. Default true.
    bool page_locked = true;
  };

  // Allocates the slabs (cudaHostAllocPortable: usable from every device). A block's address and
  // size are multiples of kAlign.
  static absl::StatusOr<std::unique_ptr<StagingPool>> Create(const Options& options);
  // Frees the slabs; every block must have been returned.
  ~StagingPool();

  static constexpr int64_t kAlign = 256;

  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  // Largest block Allocate() can return.
  int64_t max_block_bytes() const { return slab_bytes_; }

  // Returns a block of `bytes` (256-byte aligned). Blocks the caller until enough is free
  // (blocks are returned by completions, which never wait on this pool). INVALID_ARGUMENT when
  // `bytes` > max_block_bytes(). Thread-safe.
  absl::StatusOr<StagingBlock> Allocate(int64_t bytes);

  // Like Allocate() but returns RESOURCE_EXHAUSTED instead of waiting.
  absl::StatusOr<StagingBlock> TryAllocate(int64_t bytes);

  // Returns a block, or a part of one (Part()). Every part of a block is returned once, and the
  // parts returned cover the whole block. Thread-safe.
  void Free(const StagingBlock& block);

  // The `bytes` bytes of `block` from `offset` on, to be returned on their own. `offset` and
  // `bytes` are multiples of kAlign (or `bytes` reaches the block's end) within the block.
  static StagingBlock Part(const StagingBlock& block, int64_t offset, int64_t bytes) {
    return {block.ptr + offset, block.slab, block.offset + offset, bytes};
  }

  // Bytes handed out now.
  int64_t used_bytes() const;
  int64_t total_bytes() const { return slab_bytes_ * static_cast<int64_t>(slabs_.size()); }

 private:
  struct Slab {
    char* base = nullptr;
    std::map<int64_t, int64_t> free;  // offset -> size, non-adjacent
  };
  StagingPool(int64_t slab_bytes, bool page_locked, std::vector<Slab> slabs)
      : slab_bytes_(slab_bytes), page_locked_(page_locked), slabs_(std::move(slabs)) {}
  // A slab of `bytes`, kAlign-aligned: cudaHostAlloc'd, or aligned_alloc'd without page-locking.
  static absl::StatusOr<char*> AllocateSlab(int64_t bytes, bool page_locked);
  // Returns a slab's memory (cudaFreeHost, or free without page-locking).
  static void FreeSlab(char* base, bool page_locked);
  bool TryAllocateLocked(int64_t bytes, StagingBlock* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rounds *bytes up to the block alignment; INVALID_ARGUMENT when it exceeds a slab.
  absl::Status RoundAndCheck(int64_t* bytes) const;

  const int64_t slab_bytes_;
  const bool page_locked_;
  mutable absl::Mutex mu_;
  std::vector<Slab> slabs_ ABSL_GUARDED_BY(mu_);
  int64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  absl::CondVar freed_;
};

}  // namespace gemm::gpu
