// EnqueueGather: per piece, 16-byte stores at aligned destinations, each built from two aligned
// 16-byte source words (the next one from the neighbouring lane) shifted into place, so every
// read of host memory is an aligned 16-byte load whatever the two alignments.
#include <algorithm>
#include <cstdint>

#include "common/status_macros.h"
#include "server/gpu/cuda_util.h"
#include "server/gpu/piece_gather.h"

namespace gemm::gpu {
namespace {

constexpr int kMaxPerLaunch = 128;  // 128 x 24 bytes of pieces in the kernel's parameters
constexpr int kThreads = 256;
constexpr int kMaxBlocksPerPiece = 32;

struct GatherArgs {
  GatherPiece pieces[kMaxPerLaunch];
};

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
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t base = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x - lane;
       base < chunks; base += stride) {  // warp-uniform: every lane runs every iteration
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

__global__ void __launch_bounds__(kThreads) GatherKernel(GatherArgs args) {
  const GatherPiece p = args.pieces[blockIdx.y];
  const size_t to_aligned = (16 - reinterpret_cast<uintptr_t>(p.dst) % 16) % 16;
  const size_t head = p.bytes < to_aligned ? p.bytes : to_aligned;
  const size_t chunks = (p.bytes - head) / 16;
  const size_t tail = (p.bytes - head) % 16;
  const char* src = p.src + head;
  char* dst = p.dst + head;
  if (blockIdx.x == 0 && threadIdx.x < head) p.dst[threadIdx.x] = p.src[threadIdx.x];
  if (blockIdx.x == 0 && threadIdx.x < tail) {
    dst[chunks * 16 + threadIdx.x] = src[chunks * 16 + threadIdx.x];
  }
  uint4* out = reinterpret_cast<uint4*>(dst);
  if (reinterpret_cast<uintptr_t>(src) % 16 != 0) {
    CopyShifted(src, out, chunks);
    return;
  }
  const uint4* in = reinterpret_cast<const uint4*>(src);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < chunks;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

}  // namespace

absl::Status EnqueueGather(std::span<const GatherPiece> pieces, cudaStream_t stream) {
  for (size_t first = 0; first < pieces.size(); first += kMaxPerLaunch) {
    GatherArgs args{};
    const size_t n = std::min<size_t>(kMaxPerLaunch, pieces.size() - first);
    size_t largest = 0;
    for (size_t i = 0; i < n; ++i) {
      args.pieces[i] = pieces[first + i];
      largest = std::max(largest, pieces[first + i].bytes);
    }
    const size_t chunks = largest / 16 + 1;
    const unsigned blocks = static_cast<unsigned>(
        std::min<size_t>(kMaxBlocksPerPiece, (chunks + kThreads - 1) / kThreads));
    GatherKernel<<<dim3(blocks, static_cast<unsigned>(n)), kThreads, 0, stream>>>(args);
    GEMM_RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "gather kernel launch"));
  }
  return absl::OkStatus();
}

}  // namespace gemm::gpu
