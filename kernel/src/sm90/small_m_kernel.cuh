// Device code of the small-M (decode) GEMM: swap-AB mma.sync m16n8k16 over a cp.async
// multi-stage pipeline, one CTA per (128 weight rows, K split, batch entry), and the
// deterministic split-K reduction kernel.
//
// Swap-AB: the MMA computes D^T[N,M] = op(B)[N,K] · A^T[K,M]. The weight tile (128 rows of N)
// is the MMA's A operand (16x16 row-major fragments via ldmatrix; .trans for B [K,N]); the
// activation tile (m_tile rows of A) is the MMA's B operand (A is [M,K] K-major, exactly the
// "col" layout mma.sync wants), so M = 1..16 costs one 8-wide MMA column pair, not a 64-row tile.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "sm90/small_m_ptx.cuh"

namespace gemm::kernel::sm90::small_m {

// Kernel arguments (device pointers; pitches and strides in elements).
struct Params {
  const __nv_bfloat16* a;
  int64_t lda, stride_a;
  const __nv_bfloat16* b;
  int64_t ldb, stride_b;
  const void* c;  // read only when beta != 0
  int64_t ldc, stride_c;
  void* d;
  int64_t ldd, stride_d;
  float* ws;  // [splits][gridDim.z][M][N] FP32 partials when splits > 1
  int64_t m, n, k;
  int64_t batch_offset;  // batch index of blockIdx.z == 0
  int64_t batch_count;   // batch entries in this launch (gridDim.z)
  int64_t k_blocks;
  int splits;
  float alpha, beta;
};

constexpr int kThreads = 256;
constexpr int kBlockN = 128;  // weight rows per CTA
constexpr int kBlockK = 64;   // K per stage: 128-byte rows

// Static shape of one instantiation, by activation tile height kMT.
template <int kMT>
struct Config {
  static_assert(kMT == 16 || kMT == 32 || kMT == 64 || kMT == 128, "unsupported m tile");
  static constexpr int kWarps = kThreads / 32;
  // NOTE: warps split the 128 weight rows first; with a tall activation tile they also split M,
  // which keeps the ldmatrix count per MMA low (6 ldmatrix.x4 per 16 MMAs at kMT = 128).
  static constexpr int kWarpsN = kMT <= 32 ? 8 : 4;
  static constexpr int kWarpsM = kWarps / kWarpsN;
  static constexpr int kWarpN = kBlockN / kWarpsN;  // weight rows per warp
  static constexpr int kWarpM = kMT / kWarpsM;      // activation rows per warp
  static constexpr int kMmaM = kWarpN / 16;         // m16 tiles per warp
  static constexpr int kMmaN = kWarpM / 8;          // n8 tiles per warp
  static_assert(kMmaN % 2 == 0, "ldmatrix.x4 loads two n8 tiles");
  static constexpr int kBBytes = kBlockN * kBlockK * 2;
  static constexpr int kABytes = kMT * kBlockK * 2;
  static constexpr int kStageBytes = kBBytes + kABytes;
  // NOTE: about 100 KB per CTA so that two CTAs share an SM: ~2 x (stages - 1) x 16 KB of B in
  // flight per SM covers the HBM latency-bandwidth product with room to spare.
  static constexpr int kStages = kMT == 16 ? 6 : kMT == 32 ? 5 : kMT == 64 ? 4 : 3;
  static constexpr int kSmemBytes = kStages * kStageBytes;
};

template <typename T>
__device__ __forceinline__ float LoadF(const void* p, int64_t i) {
  if constexpr (sizeof(T) == 2) {
    return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  } else {
    return static_cast<const float*>(p)[i];
  }
}

template <typename T>
__device__ __forceinline__ void StoreF(void* p, int64_t i, float v) {
  if constexpr (sizeof(T) == 2) {
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  } else {
    static_cast<float*>(p)[i] = v;
  }
}

__device__ __forceinline__ uint32_t ClampBytes(int64_t elems_left) {
  return elems_left <= 0 ? 0u : elems_left >= 8 ? 16u : static_cast<uint32_t>(elems_left * 2);
}

// One CTA: weight rows [blockIdx.x * 128, +128), K blocks of split blockIdx.y, batch entry
// batch_offset + blockIdx.z, all m_tile activation rows. kKN: B is [K,N] (else [N,K]).
template <int kMT, bool kKN, typename OutT>
__global__ void __launch_bounds__(kThreads, 2) SmallMKernel(const Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Cfg = Config<kMT>;
  extern __shared__ __align__(128) uint8_t smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBlockN;
  const int split = blockIdx.y;
  const int64_t bi = p.batch_offset + blockIdx.z;
  const __nv_bfloat16* A = p.a + bi * p.stride_a;
  const __nv_bfloat16* B = p.b + bi * p.stride_b;
  const int64_t kb_begin = split * p.k_blocks / p.splits;
  const int nk = static_cast<int>((split + 1) * p.k_blocks / p.splits - kb_begin);
  const uint32_t smem0 = SmemAddr(smem);

  // Per-thread load coordinates (constant over the K loop). Shared tiles use 16-byte chunks
  // XOR-swizzled by (row & 7) so that ldmatrix reads of 8 rows hit 8 distinct bank groups.
  // kNK: B tile [128 n][64 k], thread -> chunk (tid & 7) of rows tid / 8 + 32 j.
  // kKN: B tile [64 k][128 n], thread -> chunk (tid & 15) of rows tid / 16 + 16 j.
  constexpr int kBLoads = Cfg::kBBytes / 16 / kThreads;  // 4
  constexpr int kALoads = (kMT * 8 + kThreads - 1) / kThreads;
  auto load_stage = [&](int slot, int64_t kb) {
    const uint32_t sb = smem0 + slot * Cfg::kStageBytes;
    const uint32_t sa = sb + Cfg::kBBytes;
    const int64_t k0 = kb * kBlockK;
    if constexpr (!kKN) {
      const int c = tid & 7, r0 = tid >> 3;
      const int64_t k = k0 + c * 8;
      const uint32_t kbytes = ClampBytes(p.k - k);
#pragma unroll
      for (int j = 0; j < kBLoads; ++j) {
        const int r = r0 + 32 * j;
        const int64_t n = n0 + r;
        const bool ok = n < p.n && kbytes > 0;
        const __nv_bfloat16* src = ok ? B + n * p.ldb + k : B;
        CpAsync16(sb + r * 128 + ((c ^ (r & 7)) << 4), src, ok ? kbytes : 0u);
      }
    } else {
      const int c = tid & 15, r0 = tid >> 4;
      const int64_t n = n0 + c * 8;
      const uint32_t nbytes = ClampBytes(p.n - n);
#pragma unroll
      for (int j = 0; j < kBLoads; ++j) {
        const int r = r0 + 16 * j;
        const int64_t k = k0 + r;
        const bool ok = k < p.k && nbytes > 0;
        const __nv_bfloat16* src = ok ? B + k * p.ldb + n : B;
        CpAsync16(sb + r * 256 + ((c ^ (r & 7)) << 4), src, ok ? nbytes : 0u);
      }
    }
#pragma unroll
    for (int j = 0; j < kALoads; ++j) {
      const int idx = tid + j * kThreads;
      if (kMT * 8 % kThreads == 0 || idx < kMT * 8) {
        const int r = idx >> 3, c = idx & 7;
        const int64_t k = k0 + c * 8;
        const uint32_t bytes = r < p.m ? ClampBytes(p.k - k) : 0u;
        const __nv_bfloat16* src = bytes ? A + r * p.lda + k : A;
        CpAsync16(sa + r * 128 + ((c ^ (r & 7)) << 4), src, bytes);
      }
    }
  };

  const int warp_n = warp / Cfg::kWarpsM, warp_m = warp % Cfg::kWarpsM;
  const int wn0 = warp_n * Cfg::kWarpN, wm0 = warp_m * Cfg::kWarpM;
  float acc[Cfg::kMmaM][Cfg::kMmaN][4];
#pragma unroll
  for (int i = 0; i < Cfg::kMmaM; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::kMmaN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

#pragma unroll
  for (int s = 0; s < Cfg::kStages - 1; ++s) {
    if (s < nk) load_stage(s, kb_begin + s);
    CpAsyncCommit();
  }

  for (int it = 0; it < nk; ++it) {
    CpAsyncWait<Cfg::kStages - 2>();
    __syncthreads();  // stage `it` visible to all; slot (it - 1) % kStages free for reuse
    {
      const int next = it + Cfg::kStages - 1;
      if (next < nk) load_stage(next % Cfg::kStages, kb_begin + next);
      CpAsyncCommit();
    }
    const uint32_t sb = smem0 + (it % Cfg::kStages) * Cfg::kStageBytes;
    const uint32_t sa = sb + Cfg::kBBytes;
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
      uint32_t af[Cfg::kMmaM][4];
#pragma unroll
      for (int mt = 0; mt < Cfg::kMmaM; ++mt) {
        if constexpr (!kKN) {
          // Matrices: (rows 0-7 | 8-15) x (k 0-7 | 8-15) -> lanes 0-15 rows at k chunk 2kk,
          // lanes 16-31 the same rows at chunk 2kk + 1.
          const int r = wn0 + mt * 16 + (lane & 15);
          const int c = kk * 2 + (lane >> 4);
          LdMatrixX4(af[mt], sb + r * 128 + ((c ^ (lane & 7)) << 4));
        } else {
          // Stored [k][n]; matrix i = lane / 8 covers n offset (i & 1) * 8, k offset (i >> 1) * 8.
          const int i = lane >> 3;
          const int k = kk * 16 + (i >> 1) * 8 + (lane & 7);
          const int c = (wn0 + mt * 16 + (i & 1) * 8) >> 3;
          LdMatrixX4Trans(af[mt], sb + k * 256 + ((c ^ (lane & 7)) << 4));
        }
      }
      uint32_t bfr[Cfg::kMmaN][2];
#pragma unroll
      for (int j = 0; j < Cfg::kMmaN / 2; ++j) {
        // Matrix i = lane / 8: activation rows (i >> 1) * 8 of this n8 pair, k chunk (i & 1).
        const int i = lane >> 3;
        const int r = wm0 + j * 16 + (i >> 1) * 8 + (lane & 7);
        const int c = kk * 2 + (i & 1);
        uint32_t q[4];
        LdMatrixX4(q, sa + r * 128 + ((c ^ (lane & 7)) << 4));
        bfr[2 * j][0] = q[0];
        bfr[2 * j][1] = q[1];
        bfr[2 * j + 1][0] = q[2];
        bfr[2 * j + 1][1] = q[3];
      }
#pragma unroll
      for (int mt = 0; mt < Cfg::kMmaM; ++mt)
#pragma unroll
        for (int nt = 0; nt < Cfg::kMmaN; ++nt)
          MmaBf16(acc[mt][nt], af[mt], bfr[nt][0], bfr[nt][1]);
    }
  }
  CpAsyncWait<0>();

  // Epilogue. Accumulator element e of tile (mt, nt): weight row g (+8 for e >= 2), activation
  // row 2t (+1 for odd e), g = lane / 4, t = lane % 4.
  const int g = lane >> 2, t = lane & 3;
  const bool direct = p.splits == 1;
  float* ws = direct
                  ? nullptr
                  : p.ws + (static_cast<int64_t>(split) * p.batch_count + blockIdx.z) * p.m * p.n;
  void* D = static_cast<char*>(p.d) + bi * p.stride_d * static_cast<int64_t>(sizeof(OutT));
  const void* C = p.beta != 0.f ? static_cast<const char*>(p.c) +
                                      bi * p.stride_c * static_cast<int64_t>(sizeof(OutT))
                                : nullptr;
#pragma unroll
  for (int mt = 0; mt < Cfg::kMmaM; ++mt)
#pragma unroll
    for (int nt = 0; nt < Cfg::kMmaN; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t n = n0 + wn0 + mt * 16 + g + (e >> 1) * 8;
        const int64_t m = wm0 + nt * 8 + t * 2 + (e & 1);
        if (n >= p.n || m >= p.m) continue;
        const float v = acc[mt][nt][e];
        if (direct) {
          float out = p.alpha * v;
          if (C != nullptr) out += p.beta * LoadF<OutT>(C, m * p.ldc + n);
          StoreF<OutT>(D, m * p.ldd + n, out);
        } else {
          ws[m * p.n + n] = v;
        }
      }
#endif
}

// Sums the split-K partials in split order (deterministic) and applies alpha, beta and C.
// Launched with programmatic dependent launch behind SmallMKernel; waits for it first.
template <typename OutT>
__global__ void __launch_bounds__(256) SmallMReduceKernel(const Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  GridDependencyWait();
  const int64_t mn = p.m * p.n;
  const int64_t total = p.batch_count * mn;
  const int64_t split_stride = total;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t z = idx / mn, rem = idx - z * mn;
    const int64_t m = rem / p.n, n = rem - m * p.n;
    float s = 0.f;
    for (int sp = 0; sp < p.splits; ++sp) s += p.ws[sp * split_stride + idx];
    const int64_t bi = p.batch_offset + z;
    float out = p.alpha * s;
    if (p.beta != 0.f) {
      const void* C =
          static_cast<const char*>(p.c) + bi * p.stride_c * static_cast<int64_t>(sizeof(OutT));
      out += p.beta * LoadF<OutT>(C, m * p.ldc + n);
    }
    void* D = static_cast<char*>(p.d) + bi * p.stride_d * static_cast<int64_t>(sizeof(OutT));
    StoreF<OutT>(D, m * p.ldd + n, out);
  }
#endif
}

}  // namespace gemm::kernel::sm90::small_m
