// EnqueueDeviceCopies: a grid-stride copy kernel, blockIdx.y = the copy, 16-byte accesses where
// every address, pitch and width allows them.
#include <cstdint>

#include "common/status_macros.h"
#include "server/gpu/cuda_util.h"
#include "server/gpu/device_copy.h"

namespace gemm::gpu {
namespace {

constexpr int kMaxPerLaunch = 32;  // 32 x 48 bytes of copies in the kernel's parameters
constexpr int kThreads = 256;
constexpr int kMaxBlocksPerCopy = 64;

struct DeviceCopyArgs {
  Copy2D copies[kMaxPerLaunch];
};

template <typename T>
__device__ void CopyRows(const Copy2D& c) {
  const size_t per_row = c.width / sizeof(T);
  const size_t total = per_row * c.rows;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = i / per_row, col = i % per_row;
    const T* s = reinterpret_cast<const T*>(static_cast<const char*>(c.src) + r * c.spitch) + col;
    T* d = reinterpret_cast<T*>(static_cast<char*>(c.dst) + r * c.dpitch) + col;
    *d = *s;
  }
}

__global__ void __launch_bounds__(kThreads) CopyKernel(DeviceCopyArgs args) {
  const Copy2D& c = args.copies[blockIdx.y];
  const uintptr_t bits = reinterpret_cast<uintptr_t>(c.src) | reinterpret_cast<uintptr_t>(c.dst) |
                         c.spitch | c.dpitch | c.width;
  if (bits % 16 == 0) {
    CopyRows<uint4>(c);
  } else {
    CopyRows<unsigned char>(c);
  }
}

}  // namespace

absl::Status EnqueueDeviceCopies(std::span<const Copy2D> copies, cudaStream_t stream) {
  for (size_t first = 0; first < copies.size(); first += kMaxPerLaunch) {
    DeviceCopyArgs args{};
    const size_t n = std::min<size_t>(kMaxPerLaunch, copies.size() - first);
    size_t widest = 0;  // elements of the largest copy, for the grid's x
    for (size_t i = 0; i < n; ++i) {
      args.copies[i] = copies[first + i];
      widest = std::max(widest, copies[first + i].width * copies[first + i].rows / 16 + 1);
    }
    const unsigned blocks = static_cast<unsigned>(
        std::min<size_t>(kMaxBlocksPerCopy, (widest + kThreads - 1) / kThreads));
    CopyKernel<<<dim3(blocks, static_cast<unsigned>(n)), kThreads, 0, stream>>>(args);
    GEMM_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "device copy kernel launch"));
  }
  return absl::OkStatus();
}

}  // namespace gemm::gpu
