// PoolAllocation and StagingLease (see unit_memory.h).
#include "server/gpu/unit_memory.h"

#include <utility>

#include "common/log.h"
#include "server/gpu/cuda_util.h"

namespace gemm::gpu {

absl::StatusOr<PoolAllocation> PoolAllocation::Allocate(DevicePool* pool, int64_t bytes,
                                                        cudaStream_t stream) {
  absl::StatusOr<void*> ptr = pool->Allocate(bytes, stream);
  if (!ptr.ok()) return ptr.status();
  PoolAllocation a;
  a.pool_ = pool;
  a.ptr_ = static_cast<char*>(*ptr);
  a.accounted_ = bytes;
  a.stream_ = stream;
  return a;
}

PoolAllocation& PoolAllocation::operator=(PoolAllocation&& other) noexcept {
  if (this != &other) {
    Reset();
    pool_ = std::exchange(other.pool_, nullptr);
    ptr_ = std::exchange(other.ptr_, nullptr);
    accounted_ = std::exchange(other.accounted_, 0);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void PoolAllocation::FreeAfterWork() {
  if (ptr_ == nullptr) return;
  absl::Status st = pool_->FreeAsync(ptr_, stream_);
  if (!st.ok()) {
    GEMM_LOG(ERROR) << "device " << pool_->device() << ": " << st;
    (void)cudaStreamSynchronize(stream_);  // cudaFreeAsync failed: free synchronously
    (void)cudaFree(ptr_);
  }
  ptr_ = nullptr;
}

void PoolAllocation::Reset() {
  if (pool_ == nullptr) return;
  FreeAfterWork();
  pool_->Release(accounted_);
  pool_ = nullptr;
  accounted_ = 0;
}

absl::StatusOr<StagingLease> StagingLease::Allocate(StagingPool* pool, int64_t bytes) {
  absl::StatusOr<StagingBlock> block = pool->Allocate(bytes);
  if (!block.ok()) return block.status();
  StagingLease lease;
  lease.pool_ = pool;
  lease.block_ = *block;
  return lease;
}

StagingLease& StagingLease::operator=(StagingLease&& other) noexcept {
  if (this != &other) {
    Reset();
    pool_ = std::exchange(other.pool_, nullptr);
    block_ = std::exchange(other.block_, StagingBlock{});
  }
  return *this;
}

void StagingLease::Reset() {
  if (pool_ == nullptr) return;
  pool_->Free(block_);
  pool_ = nullptr;
  block_ = {};
}

}  // namespace gemm::gpu
