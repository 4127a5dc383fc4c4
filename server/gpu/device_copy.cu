// EnqueueDeviceCopies: a grid-stride copy kernel, blockIdx.y = the copy. Where every address,
// pitch and width is a multiple of 16, one 16-byte access per thread and step across all rows;
// otherwise each row's body is written by aligned 16-byte stores built from two aligned 16-byte
// source words (the next one from the neighbouring lane) shifted into place, so every read of
// host memory is an aligned 16-byte load whatever the two alignments.
#include <algorithm>
#include <cstdint>

#include "common/status_macros.h"
#include "server/gpu/cuda_util.h"
#include "server/gpu/device_copy.h"

namespace gemm::gpu {
namespace {

constexpr int kMaxPerLaunch = 80;  // 80 x 48 bytes of copies: within 4 KiB of kernel parameters
constexpr int kThreads = 256;
constexpr int kMaxBlocksPerCopy = 64;

struct DeviceCopyArgs {
  Copy2D copies[kMaxPerLaunch];
};

// This thread's first index of a grid-stride loop, and the loop's stride.
__device__ size_t FirstIndex() {
  return blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
}
__device__ size_t Stride() { return static_cast<size_t>(gridDim.x) * blockDim.x; }

// Every row of `c`, 16 bytes per access (all addresses, pitches and the width are multiples).
__device__ void CopyAlignedRows(const Copy2D& c) {
  const size_t per_row = c.width / 16;
  const size_t total = per_row * c.rows;
  for (size_t i = FirstIndex(); i < total; i += Stride()) {
    const size_t r = i / per_row, col = i % per_row;
    const uint4* s = reinterpret_cast<const uint4*>(static_cast<const char*>(c.src) + r * c.spitch);
    uint4* d = reinterpret_cast<uint4*>(static_cast<char*>(c.dst) + r * c.dpitch);
    d[col] = s[col];
  }
}

// Bytes [shift, shift + 16) of the 32 bytes `a` then `b` (little-endian).
__device__ uint4 Shifted(uint4 a, uint4 b, unsigned shift) {
  const unsigned bits = (shift % 4) * 8;
  uint32_t u0, u1, u2, u3, u4;
  switch (shift / 4) {
    case 0:
      u0 = a.x, u1 = a.y, u2 = a.z, u3 = a.w, u4 = b.x;
      break;
    case 1:
      u0 = a.y, u1 = a.z, u2 = a.w, u3 = b.x, u4 = b.y;
      break;
    case 2:
      u0 = a.z, u1 = a.w, u2 = b.x, u3 = b.y, u4 = b.z;
      break;
    default:
      u0 = a.w, u1 = b.x, u2 = b.y, u3 = b.z, u4 = b.w;
      break;
  }
  return make_uint4(__funnelshift_r(u0, u1, bits), __funnelshift_r(u1, u2, bits),
                    __funnelshift_r(u2, u3, bits), __funnelshift_r(u3, u4, bits));
}

// `chunks` 16-byte stores to the aligned `dst` from `src` (shift = src % 16 != 0). Lane l of a
// warp loads aligned word i and takes word i + 1 from lane l + 1 (the last lane loads it): word
// `chunks` holds the body's last bytes, so every word read shares a 16-byte block with the body.
__device__ void CopyShifted(const char* src, uint4* dst, size_t chunks) {
  const unsigned shift = reinterpret_cast<uintptr_t>(src) % 16;
  const uint4* words = reinterpret_cast<const uint4*>(src - shift);
  const unsigned lane = threadIdx.x % 32;
  for (size_t base = FirstIndex() - lane; base < chunks;
       base += Stride()) {  // warp-uniform: every lane runs every iteration
    const size_t i = base + lane;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    const uint4 w = i <= chunks ? words[i] : zero;
    uint4 next;
    next.x = __shfl_down_sync(0xffffffffu, w.x, 1);
    next.y = __shfl_down_sync(0xffffffffu, w.y, 1);
    next.z = __shfl_down_sync(0xffffffffu, w.z, 1);
    next.w = __shfl_down_sync(0xffffffffu, w.w, 1);
    if (lane == 31) next = i + 1 <= chunks ? words[i + 1] : zero;
    if (i < chunks) dst[i] = Shifted(w, next, shift);
  }
}

// `bytes` bytes from `src` to `dst`, any alignment: the head up to dst's next 16-byte boundary
// and the tail byte by byte (block 0), the body in 16-byte stores (every block).
__device__ void CopyRow(const char* src, char* dst, size_t bytes) {
  const size_t to_aligned = (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16;
  const size_t head = bytes < to_aligned ? bytes : to_aligned;
  const size_t chunks = (bytes - head) / 16;
  const size_t tail = (bytes - head) % 16;
  if (blockIdx.x == 0 && threadIdx.x < head) dst[threadIdx.x] = src[threadIdx.x];
  src += head;
  dst += head;
  if (blockIdx.x == 0 && threadIdx.x < tail) {
    dst[chunks * 16 + threadIdx.x] = src[chunks * 16 + threadIdx.x];
  }
  uint4* out = reinterpret_cast<uint4*>(dst);
  if (reinterpret_cast<uintptr_t>(src) % 16 != 0) {
    CopyShifted(src, out, chunks);
    return;
  }
  const uint4* in = reinterpret_cast<const uint4*>(src);
  for (size_t i = FirstIndex(); i < chunks; i += Stride()) out[i] = in[i];
}

__global__ void __launch_bounds__(kThreads) CopyKernel(DeviceCopyArgs args) {
  const Copy2D c = args.copies[blockIdx.y];
  const uintptr_t bits = reinterpret_cast<uintptr_t>(c.src) | reinterpret_cast<uintptr_t>(c.dst) |
                         c.spitch | c.dpitch | c.width;
  if (bits % 16 == 0) {
    CopyAlignedRows(c);
    return;
  }
  for (size_t r = 0; r < c.rows; ++r) {
    CopyRow(static_cast<const char*>(c.src) + r * c.spitch,
            static_cast<char*>(c.dst) + r * c.dpitch, c.width);
  }
}

}  // namespace

absl::Status EnqueueDeviceCopies(std::span<const Copy2D> copies, cudaStream_t stream) {
  for (size_t first = 0; first < copies.size(); first += kMaxPerLaunch) {
    DeviceCopyArgs args{};
    const size_t n = std::min<size_t>(kMaxPerLaunch, copies.size() - first);
    size_t largest = 0;  // 16-byte words of the largest copy, for the grid's x
    for (size_t i = 0; i < n; ++i) {
      args.copies[i] = copies[first + i];
      largest = std::max(largest, copies[first + i].width * copies[first + i].rows / 16 + 1);
    }
    const unsigned blocks = static_cast<unsigned>(
        std::min<size_t>(kMaxBlocksPerCopy, (largest + kThreads - 1) / kThreads));
    CopyKernel<<<dim3(blocks, static_cast<unsigned>(n)), kThreads, 0, stream>>>(args);
    GEMM_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "device copy kernel launch"));
  }
  return absl::OkStatus();
}

}  // namespace gemm::gpu
