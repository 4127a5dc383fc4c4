// Owners of the memory one unit holds: its device-pool allocation and its pinned staging block.
// Each returns what it holds in its destructor, so a unit that fails at any stage, or completes,
// gives its memory back without a hand-written free on any path.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/gpu/device_pool.h"
#include "server/gpu/staging_pool.h"

namespace gemm::gpu {

// A stream-ordered allocation from a DevicePool and the pool's accounting of it. Move-only.
// The destructor enqueues the free on the allocation's stream if FreeAfterWork() did not, then
// releases the accounting. Destroy it on a thread whose current device is the pool's.
class PoolAllocation {
 public:
  PoolAllocation() = default;
  // Allocates `bytes` on `stream` (see DevicePool::Allocate). `pool` must outlive the result.
  static absl::StatusOr<PoolAllocation> Allocate(DevicePool* pool, int64_t bytes,
                                                 cudaStream_t stream);
  PoolAllocation(PoolAllocation&& other) noexcept { *this = std::move(other); }
  PoolAllocation& operator=(PoolAllocation&& other) noexcept;
  ~PoolAllocation() { Reset(); }

  // Base address (null when empty).
  char* get() const { return ptr_; }
  // Enqueues the free on the allocation's stream, after the work enqueued there so far; the
  // bytes stay accounted until this owner is destroyed (once that work has completed). On a
  // failed enqueue, waits for the stream and frees at once.
  void FreeAfterWork();

 private:
  void Reset();

  DevicePool* pool_ = nullptr;
  char* ptr_ = nullptr;  // null once the free is enqueued
  int64_t accounted_ = 0;
  cudaStream_t stream_ = nullptr;
};

// A block of a StagingPool. Move-only; the destructor returns the block.
class StagingLease {
 public:
  StagingLease() = default;
  // Takes a block of `bytes` (blocks while the pool is in use; see StagingPool::Allocate).
  // `pool` must outlive the result.
  static absl::StatusOr<StagingLease> Allocate(StagingPool* pool, int64_t bytes);
  StagingLease(StagingLease&& other) noexcept { *this = std::move(other); }
  StagingLease& operator=(StagingLease&& other) noexcept;
  ~StagingLease() { Reset(); }

  // Base address (null when empty).
  char* ptr() const { return block_.ptr; }

 private:
  void Reset();

  StagingPool* pool_ = nullptr;
  StagingBlock block_;
};

}  // namespace gemm::gpu
