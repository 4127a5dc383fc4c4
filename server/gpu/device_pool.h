// Device memory of one GPU: a CUDA stream-ordered memory pool (cudaMemPool) with a high release
// threshold, plus byte accounting against a configured cap. Requests and resident matrices take
// their device memory here; nothing on the serving path calls cudaMalloc/cudaFree.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gemm::gpu {

class DevicePool {
 public:
  struct Options {
    int device = 0;         // CUDA ordinal
    int64_t cap_bytes = 0;  // most bytes accounted at once; 0 = 90% of free memory now
  };

  // Creates the pool on `options.device` (makes it current on the calling thread).
  static absl::StatusOr<std::unique_ptr<DevicePool>> Create(const Options& options);

  // Destroys the pool. Every allocation must have been freed (stream-ordered frees may still be
  // pending: the pool is synchronized first).
  ~DevicePool();

  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  // Accounts `bytes` against the cap, then allocates them stream-ordered on `stream` (a stream of
  // this device). RESOURCE_EXHAUSTED (nothing held) when over the cap or the pool cannot grow.
  // Non-blocking. Thread-safe.
  absl::StatusOr<void*> Allocate(int64_t bytes, cudaStream_t stream);

  // Enqueues the free of `ptr` on `stream`. Does NOT release the accounting: call Release() once
  // the work using it has completed (or right away when it has already). Thread-safe.
  absl::Status FreeAsync(void* ptr, cudaStream_t stream);

  // Returns `bytes` of accounting taken by Allocate(). Thread-safe.
  void Release(int64_t bytes);

  // Whether `bytes` more would fit under the cap now (a hint; Allocate decides).
  bool Fits(int64_t bytes) const { return used_bytes() + bytes <= cap_bytes_; }

  int device() const { return device_; }
  int64_t cap_bytes() const { return cap_bytes_; }
  // Bytes accounted now (allocations not yet Release()d).
  int64_t used_bytes() const { return used_.load(std::memory_order_relaxed); }
  // Bytes the CUDA pool holds from the driver now (cudaMemPoolAttrReservedMemCurrent), or -1.
  int64_t reserved_bytes() const;
  // Bytes of the CUDA pool handed out now (cudaMemPoolAttrUsedMemCurrent), or -1.
  int64_t pool_used_bytes() const;

 private:
  DevicePool(int device, cudaMemPool_t pool, int64_t cap_bytes)
      : device_(device), pool_(pool), cap_bytes_(cap_bytes) {}

  const int device_;
  const cudaMemPool_t pool_;
  const int64_t cap_bytes_;
  std::atomic<int64_t> used_{0};
};

}  // namespace gemm::gpu
