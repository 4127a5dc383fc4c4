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

// One block of staging memory. Value type; return it with StagingPool::Free().
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
  };

  // Allocates the slabs (cudaHostAllocPortable: usable from every device).
  static absl::StatusOr<std::unique_ptr<StagingPool>> Create(const Options& options);
  // Frees the slabs; every block must have been returned.
  ~StagingPool();

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

  // Returns a block. Thread-safe.
  void Free(const StagingBlock& block);

  // Bytes handed out now.
  int64_t used_bytes() const;
  int64_t total_bytes() const { return slab_bytes_ * static_cast<int64_t>(slabs_.size()); }

 private:
  struct Slab {
    char* base = nullptr;
    std::map<int64_t, int64_t> free;  // offset -> size, non-adjacent
  };
  StagingPool(int64_t slab_bytes, std::vector<Slab> slabs)
      : slab_bytes_(slab_bytes), slabs_(std::move(slabs)) {}
  bool TryAllocateLocked(int64_t bytes, StagingBlock* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rounds *bytes up to the block alignment; INVALID_ARGUMENT when it exceeds a slab.
  absl::Status RoundAndCheck(int64_t* bytes) const;

  const int64_t slab_bytes_;
  mutable absl::Mutex mu_;
  std::vector<Slab> slabs_ ABSL_GUARDED_BY(mu_);
  int64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  absl::CondVar freed_;
};

}  // namespace gemm::gpu
