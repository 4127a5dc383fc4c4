// DevicePool: cudaMemPool + cap accounting (see device_pool.h).
#include "server/gpu/device_pool.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/gpu/cuda_util.h"

namespace gemm::gpu {

absl::StatusOr<std::unique_ptr<DevicePool>> DevicePool::Create(const Options& options) {
  GEMM_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(options.device), "cudaSetDevice"));
  int64_t cap = options.cap_bytes;
  if (cap <= 0) {
    size_t free_bytes = 0, total_bytes = 0;
    GEMM_RETURN_IF_ERROR(CudaStatus(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
    cap = static_cast<int64_t>(static_cast<double>(free_bytes) * 0.9);
  }
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = options.device;
  // NOTE: no props.maxSize: the cap is enforced by our accounting (exact, per allocation), so
  // pool granularity/fragmentation never turns an allocation that fits the cap into an error.
  cudaMemPool_t pool = nullptr;
  GEMM_RETURN_IF_ERROR(CudaStatus(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate"));
  // High release threshold: memory freed back to the pool stays reserved for reuse instead of
  // being returned to the driver at every synchronization.
  uint64_t threshold = static_cast<uint64_t>(cap);
  absl::Status st =
      CudaStatus(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                 "cudaMemPoolSetAttribute(ReleaseThreshold)");
  if (!st.ok()) {
    cudaMemPoolDestroy(pool);
    return st;
  }
  return std::unique_ptr<DevicePool>(new DevicePool(options.device, pool, cap));
}

DevicePool::~DevicePool() {
  cudaSetDevice(device_);
  cudaDeviceSynchronize();  // pending stream-ordered frees
  cudaMemPoolDestroy(pool_);
}

absl::StatusOr<void*> DevicePool::Allocate(int64_t bytes, cudaStream_t stream) {
  if (bytes <= 0) bytes = 1;
  int64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (used + bytes > cap_bytes_) {
      return absl::ResourceExhaustedError(
          absl::StrCat("device ", device_, ": needs ", bytes, " bytes of device memory, ",
                       cap_bytes_ - used, " of the pool cap ", cap_bytes_, " free"));
    }
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  void* ptr = nullptr;
  absl::Status st =
      CudaStatus(cudaMallocFromPoolAsync(&ptr, static_cast<size_t>(bytes), pool_, stream),
                 "cudaMallocFromPoolAsync");
  if (!st.ok()) {
    Release(bytes);
    if (absl::IsResourceExhausted(st)) {
      return absl::ResourceExhaustedError(absl::StrCat("device ", device_, ": ", st.message()));
    }
    return st;
  }
  return ptr;
}

absl::Status DevicePool::FreeAsync(void* ptr, cudaStream_t stream) {
  if (ptr == nullptr) return absl::OkStatus();
  return CudaStatus(cudaFreeAsync(ptr, stream), "cudaFreeAsync");
}

void DevicePool::Release(int64_t bytes) {
  if (bytes <= 0) bytes = 1;
  used_.fetch_sub(bytes, std::memory_order_relaxed);
}

int64_t DevicePool::reserved_bytes() const {
  uint64_t v = 0;
  if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &v) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(v);
}

int64_t DevicePool::pool_used_bytes() const {
  uint64_t v = 0;
  if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &v) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(v);
}

}  // namespace gemm::gpu
