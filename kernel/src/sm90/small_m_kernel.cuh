// Device code of the small-M (decode) GEMM: swap-AB mma.sync m16n8k16 over a cp.async
// multi-stage pipeline, one CTA per (128 weight rows, K split, batch entry), and the
// deterministic split-K reduction kernel.
//
// Swap-AB: the MMA computes D^T[N,M] = op(B)[N,K] · A^T[K,M]. The weight tile (128 rows of N)
// is the MMA's A operand (16x16 row-major fragments via ldmatrix; .trans for B [K,N]); the
// activation tile (m_tile rows of A) is the MMA's B operand (A is [M,K] K-major, exactly the
// "col" layout mma.sync wants), so M = 1..16 costs one 8-wide MMA column pair, not a 64-row tile.
//
// Cluster split-K (Params::cluster_k > 1, 16-row tiles only): when the tiles times 2, 4 or 8
// about fill the SMs, the grid is exactly that many CTAs in clusters of cluster_k, so each CTA's
// range is one K piece of one tile. The cluster adds its partials through distributed shared
// memory (each CTA stores 128 / cluster_k of the tile's weight rows): no workspace, no fixup.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "ptx/cluster.cuh"
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
  float* ws;  // [ctas][2][M][kBlockN] FP32 partial tiles (stream-K), unused when none split
  int64_t m, n, k;
  int64_t batch;
  int64_t n_tiles, k_blocks;
  int64_t total_iters;  // batch * n_tiles * k_blocks
  int64_t ctas;         // gridDim.x: CTA c runs iterations [c * total / ctas, (c+1) * total / ctas)
  int32_t cluster_k;    // 1, or the cluster size when clusters split each tile's K (see above)
  float alpha, beta;
};

constexpr int kThreads = 256;
constexpr int kBlockN = 128;  // weight rows per tile
constexpr int kBlockK = 64;   // K per stage: 128-byte rows

// First iteration of CTA `c` and the CTA that runs iteration `i` (exact inverses).
__host__ __device__ inline int64_t CtaBegin(int64_t c, const Params& p) {
  return c * p.total_iters / p.ctas;
}
__host__ __device__ inline int64_t CtaOf(int64_t i, const Params& p) {
  return ((i + 1) * p.ctas - 1) / p.total_iters;
}

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
  // NOTE: about 100 KB per CTA so that two CTAs can share an SM; (stages - 1) x 16 KB of B in
  // flight per CTA covers the HBM latency-bandwidth product share of one SM.
  static constexpr int kStages = kMT == 16 ? 6 : kMT == 32 ? 5 : kMT == 64 ? 4 : 3;
  static constexpr int kSmemBytes = kStages * kStageBytes;
};

// Register bound of SmallMKernel: two CTAs per SM (128 registers per thread). NOTE: the
// sm_100a build of the 128-row tile needs more than 128 registers (ptxas spilled 80 bytes); it
// gets the full register file there (one CTA per SM; the dispatch never runs it on SM100).
__host__ __device__ constexpr int MinCtasPerSm([[maybe_unused]] int m_tile) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  return m_tile == 128 ? 1 : 2;
#else
  return 2;
#endif
}

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

// Stream-K over the iteration space (batch entry, 128-row weight tile, 64-wide K block), K
// fastest: CTA c runs a contiguous range of iterations, so every CTA streams the same number of
// B bytes whatever the shape. A tile covered by one CTA is written directly (alpha, beta, C);
// a tile shared by several CTAs leaves FP32 partials in the workspace (slot 0: the CTA's first
// tile, slot 1: its last) for SmallMFixupKernel. kKN: B is [K,N] (else [N,K]).
template <int kMT, bool kKN, typename OutT, bool kCluster = false>
__global__ void __launch_bounds__(kThreads, MinCtasPerSm(kMT)) SmallMKernel(const Params p) {
  static_assert(!kCluster || kMT == 16, "cluster split-K is built for the 16-row tile only");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using Cfg = Config<kMT>;
  extern __shared__ __align__(128) uint8_t smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t cta = blockIdx.x;
  const int64_t it_begin = CtaBegin(cta, p);
  const int nk = static_cast<int>(CtaBegin(cta + 1, p) - it_begin);
  const uint32_t smem0 = SmemAddr(smem);
  // NOTE: the fixup kernel's blocks become resident now and wait in griddepcontrol.wait, so
  // they start as soon as this grid ends instead of being launched then.
  LaunchDependents();

  // Loader position (batch, tile, k block), advanced one iteration per stage.
  int64_t l_kb = it_begin % p.k_blocks;
  int64_t l_tile = (it_begin / p.k_blocks) % p.n_tiles;
  int64_t l_b = it_begin / (p.k_blocks * p.n_tiles);
  auto advance = [&p](int64_t& kb, int64_t& tile, int64_t& b) {
    if (++kb == p.k_blocks) {
      kb = 0;
      if (++tile == p.n_tiles) {
        tile = 0;
        ++b;
      }
    }
  };

  // Shared tiles use 16-byte chunks XOR-swizzled by (row & 7) so that ldmatrix reads of 8 rows
  // hit 8 distinct bank groups.
  // kNK: B tile [128 n][64 k], thread -> chunk (tid & 7) of rows tid / 8 + 32 j.
  // kKN: B tile [64 k][128 n], thread -> chunk (tid & 15) of rows tid / 16 + 16 j.
  constexpr int kBLoads = Cfg::kBBytes / 16 / kThreads;  // 4
  constexpr int kALoads = (kMT * 8 + kThreads - 1) / kThreads;
  const int64_t ldb32 = 32 * p.ldb, ldb16 = 16 * p.ldb;
  auto load_stage = [&](int slot) {
    const uint32_t sb = smem0 + slot * Cfg::kStageBytes;
    const uint32_t sa = sb + Cfg::kBBytes;
    const int64_t k0 = l_kb * kBlockK, n0 = l_tile * kBlockN;
    const __nv_bfloat16* A = p.a + l_b * p.stride_a;
    const __nv_bfloat16* B = p.b + l_b * p.stride_b;
    if constexpr (!kKN) {
      const int c = tid & 7, r0 = tid >> 3;
      const int64_t k = k0 + c * 8;
      const uint32_t kbytes = ClampBytes(p.k - k);
      const __nv_bfloat16* base = B + (n0 + r0) * p.ldb + k;
      const uint32_t dst = sb + r0 * 128 + ((c ^ (r0 & 7)) << 4);  // (r & 7) == (r0 & 7)
#pragma unroll
      for (int j = 0; j < kBLoads; ++j) {
        const bool ok = n0 + r0 + 32 * j < p.n && kbytes > 0;
        CpAsync16(dst + j * 32 * 128, ok ? base + j * ldb32 : p.b, ok ? kbytes : 0u);
      }
    } else {
      const int c = tid & 15, r0 = tid >> 4;
      const int64_t n = n0 + c * 8;
      const uint32_t nbytes = ClampBytes(p.n - n);
      const __nv_bfloat16* base = B + (k0 + r0) * p.ldb + n;
      const uint32_t dst = sb + r0 * 256 + ((c ^ (r0 & 7)) << 4);  // (r & 7) == (r0 & 7)
#pragma unroll
      for (int j = 0; j < kBLoads; ++j) {
        const bool ok = k0 + r0 + 16 * j < p.k && nbytes > 0;
        CpAsync16(dst + j * 16 * 256, ok ? base + j * ldb16 : p.b, ok ? nbytes : 0u);
      }
    }
#pragma unroll
    for (int j = 0; j < kALoads; ++j) {
      const int idx = tid + j * kThreads;
      if (kMT * 8 % kThreads == 0 || idx < kMT * 8) {
        const int r = idx >> 3, c = idx & 7;
        const int64_t k = k0 + c * 8;
        const uint32_t bytes = r < p.m ? ClampBytes(p.k - k) : 0u;
        const __nv_bfloat16* src = bytes ? A + r * p.lda + k : p.a;
        CpAsync16(sa + r * 128 + ((c ^ (r & 7)) << 4), src, bytes);
      }
    }
    advance(l_kb, l_tile, l_b);
  };

  const int warp_n = warp / Cfg::kWarpsM, warp_m = warp % Cfg::kWarpsM;
  const int wn0 = warp_n * Cfg::kWarpN, wm0 = warp_m * Cfg::kWarpM;
  const int g = lane >> 2, t = lane & 3;
  float acc[Cfg::kMmaM][Cfg::kMmaN][4];
  auto zero_acc = [&]() {
#pragma unroll
    for (int i = 0; i < Cfg::kMmaM; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::kMmaN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
  };
  zero_acc();

  // Epilogue of one tile segment. Accumulator element e of (mt, nt): weight row g (+8 for
  // e >= 2), activation row 2t (+1 for odd e), g = lane / 4, t = lane % 4.
  auto store_tile = [&](int64_t b, int64_t tile, bool full, int slot) {
    const int64_t n0 = tile * kBlockN;
    float* ws = p.ws + ((cta * 2 + slot) * p.m) * kBlockN;
    void* D = static_cast<char*>(p.d) + b * p.stride_d * static_cast<int64_t>(sizeof(OutT));
    const void* C = p.beta != 0.f ? static_cast<const char*>(p.c) +
                                        b * p.stride_c * static_cast<int64_t>(sizeof(OutT))
                                  : nullptr;
#pragma unroll
    for (int mt = 0; mt < Cfg::kMmaM; ++mt)
#pragma unroll
      for (int nt = 0; nt < Cfg::kMmaN; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int nl = wn0 + mt * 16 + g + (e >> 1) * 8;
          const int64_t n = n0 + nl;
          const int64_t m = wm0 + nt * 8 + t * 2 + (e & 1);
          if (m >= p.m) continue;
          const float v = acc[mt][nt][e];
          if (full) {
            if (n >= p.n) continue;
            float out = p.alpha * v;
            if (C != nullptr) out += p.beta * LoadF<OutT>(C, m * p.ldc + n);
            StoreF<OutT>(D, m * p.ldd + n, out);
          } else {
            ws[m * kBlockN + nl] = v;
          }
        }
  };

#pragma unroll
  for (int s = 0; s < Cfg::kStages - 1; ++s) {
    if (s < nk) load_stage(s);
    CpAsyncCommit();
  }

  // Compute position.
  int64_t c_kb = it_begin % p.k_blocks;
  int64_t c_tile = (it_begin / p.k_blocks) % p.n_tiles;
  int64_t c_b = it_begin / (p.k_blocks * p.n_tiles);
  int64_t seg_first_kb = c_kb;
  bool first_segment = true;

  for (int it = 0; it < nk; ++it) {
    CpAsyncWait<Cfg::kStages - 2>();
    __syncthreads();  // stage `it` visible to all; slot (it - 1) % kStages free for reuse
    if (it + Cfg::kStages - 1 < nk) load_stage((it + Cfg::kStages - 1) % Cfg::kStages);
    CpAsyncCommit();
    const uint32_t sb = smem0 + (it % Cfg::kStages) * Cfg::kStageBytes;
    const uint32_t sa = sb + Cfg::kBBytes;
    // NOTE: fragments are double-buffered over the four k16 steps: the ldmatrix of step kk + 1
    // is issued before the MMAs of step kk, so its latency hides behind them (the asm
    // statements are volatile, so the compiler keeps this order).
    uint32_t af[2][Cfg::kMmaM][4];
    uint32_t bfr[2][Cfg::kMmaN][2];
    auto load_frags = [&](int kk, uint32_t(&a)[Cfg::kMmaM][4], uint32_t(&bv)[Cfg::kMmaN][2]) {
#pragma unroll
      for (int mt = 0; mt < Cfg::kMmaM; ++mt) {
        if constexpr (!kKN) {
          // Matrices: (rows 0-7 | 8-15) x (k 0-7 | 8-15) -> lanes 0-15 rows at k chunk 2kk,
          // lanes 16-31 the same rows at chunk 2kk + 1.
          const int r = wn0 + mt * 16 + (lane & 15);
          const int c = kk * 2 + (lane >> 4);
          LdMatrixX4(a[mt], sb + r * 128 + ((c ^ (lane & 7)) << 4));
        } else {
          // Stored [k][n]; matrix i = lane / 8 covers n offset (i & 1) * 8, k offset (i >> 1) * 8.
          const int i = lane >> 3;
          const int k = kk * 16 + (i >> 1) * 8 + (lane & 7);
          const int c = (wn0 + mt * 16 + (i & 1) * 8) >> 3;
          LdMatrixX4Trans(a[mt], sb + k * 256 + ((c ^ (lane & 7)) << 4));
        }
      }
#pragma unroll
      for (int j = 0; j < Cfg::kMmaN / 2; ++j) {
        // Matrix i = lane / 8: activation rows (i >> 1) * 8 of this n8 pair, k chunk (i & 1).
        const int i = lane >> 3;
        const int r = wm0 + j * 16 + (i >> 1) * 8 + (lane & 7);
        const int c = kk * 2 + (i & 1);
        uint32_t q[4];
        LdMatrixX4(q, sa + r * 128 + ((c ^ (lane & 7)) << 4));
        bv[2 * j][0] = q[0];
        bv[2 * j][1] = q[1];
        bv[2 * j + 1][0] = q[2];
        bv[2 * j + 1][1] = q[3];
      }
    };
    load_frags(0, af[0], bfr[0]);
#pragma unroll
    for (int kk = 0; kk < kBlockK / 16; ++kk) {
      if (kk + 1 < kBlockK / 16) load_frags(kk + 1, af[(kk + 1) & 1], bfr[(kk + 1) & 1]);
#pragma unroll
      for (int mt = 0; mt < Cfg::kMmaM; ++mt)
#pragma unroll
        for (int nt = 0; nt < Cfg::kMmaN; ++nt)
          MmaBf16(acc[mt][nt], af[kk & 1][mt], bfr[kk & 1][nt][0], bfr[kk & 1][nt][1]);
    }
    // End of a tile segment: the tile's last K block or the CTA's last iteration.
    const bool tile_end = c_kb == p.k_blocks - 1;
    if ((tile_end || it == nk - 1) && !kCluster) {  // else the cluster adds them below
      const bool full = seg_first_kb == 0 && tile_end;
      store_tile(c_b, c_tile, full, first_segment ? 0 : 1);
      zero_acc();
      first_segment = false;
    }
    advance(c_kb, c_tile, c_b);
    if (c_kb == 0) seg_first_kb = 0;
  }
  CpAsyncWait<0>();
  if constexpr (kCluster) {
    // ---- cluster split-K: partials through distributed shared memory ----
    __syncthreads();  // every warp is done with the pipeline stages: reuse them
    float* part = reinterpret_cast<float*>(smem);  // this CTA's partial tile, [kMT][kBlockN]
#pragma unroll
    for (int mt = 0; mt < Cfg::kMmaM; ++mt)
#pragma unroll
      for (int nt = 0; nt < Cfg::kMmaN; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int nl = wn0 + mt * 16 + g + (e >> 1) * 8;
          const int m = wm0 + nt * 8 + t * 2 + (e & 1);
          part[m * kBlockN + nl] = acc[mt][nt][e];
        }
    ptx::ClusterSync();  // every partial of the cluster is written (release / acquire)
    // CTA `rank` stores weight rows [rank * 128 / cs, (rank + 1) * 128 / cs) of the tile, four per
    // thread and activation row, adding the cluster's partials in rank order (deterministic).
    const int cs = p.cluster_k;
    const int w4 = kBlockN / cs / 4;
    const int rank = static_cast<int>(ptx::ClusterCtaRank());
    const int64_t bt = cta / cs;  // batch entry * n_tiles + tile
    const int64_t b = bt / p.n_tiles, n0 = (bt % p.n_tiles) * kBlockN;
    void* D = static_cast<char*>(p.d) + b * p.stride_d * static_cast<int64_t>(sizeof(OutT));
    const void* C = p.beta != 0.f ? static_cast<const char*>(p.c) +
                                        b * p.stride_c * static_cast<int64_t>(sizeof(OutT))
                                  : nullptr;
    for (int idx = tid; idx < p.m * w4; idx += kThreads) {
      const int m = idx / w4;
      const int nl = (rank * w4 + idx % w4) * 4;
      const uint32_t addr = smem0 + static_cast<uint32_t>(m * kBlockN + nl) * 4;
      // NOTE: all loads first, then the adds: the remote reads overlap.
      float4 v[8];
#pragma unroll
      for (int q = 0; q < 8; ++q) {
        if (q < cs) v[q] = ptx::LdSharedClusterF32x4(ptx::MapaShared(addr, q));
      }
      float sum[4] = {v[0].x, v[0].y, v[0].z, v[0].w};
#pragma unroll
      for (int q = 1; q < 8; ++q) {
        if (q < cs) {
          sum[0] += v[q].x;
          sum[1] += v[q].y;
          sum[2] += v[q].z;
          sum[3] += v[q].w;
        }
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t n = n0 + nl + j;
        if (n >= p.n) break;
        float out = p.alpha * sum[j];
        if (C != nullptr) out += p.beta * LoadF<OutT>(C, m * p.ldc + n);
        StoreF<OutT>(D, m * p.ldd + n, out);
      }
    }
    ptx::ClusterSync();  // no CTA leaves while a peer still reads its partial
  }
#endif
}

// Stream-K fixup: block (blockIdx.x = batch entry * n_tiles + tile, blockIdx.y = row m) of
// kBlockN threads, one output element each. A tile covered by one CTA was written by it;
// otherwise the partials of its CTAs are summed in CTA order (deterministic) and alpha, beta
// and C applied. NOTE: one row per block keeps the loop per thread short (a handful of
// independent loads): the fixup sits on the critical path after the main kernel.
// Launched with programmatic dependent launch behind SmallMKernel.
template <typename OutT>
__global__ void __launch_bounds__(kBlockN) SmallMFixupKernel(const Params p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const int64_t bt = blockIdx.x;  // b * n_tiles + tile
  const int64_t first_it = bt * p.k_blocks;
  const int64_t c0 = CtaOf(first_it, p), c1 = CtaOf(first_it + p.k_blocks - 1, p);
  if (c0 == c1) return;
  const int64_t m = blockIdx.y, nl = threadIdx.x;
  const int64_t b = bt / p.n_tiles, n = (bt % p.n_tiles) * kBlockN + nl;
  if (n >= p.n) return;
  // This tile is CTA c's first tile (slot 0) when c starts inside it, else its last (slot 1);
  // only c0 can have started before the tile.
  const int slot0 = CtaBegin(c0, p) >= first_it ? 0 : 1;
  const int64_t cta_stride = 2 * p.m * kBlockN;
  const int64_t off = m * kBlockN + nl;
  GridDependencyWait();
  float s = p.ws[(c0 * 2 + slot0) * p.m * kBlockN + off];
  const float* next = p.ws + (c0 + 1) * cta_stride + off;  // slot 0 of c0 + 1, c0 + 2, ...
  const int ncta = static_cast<int>(c1 - c0);
  for (int c = 0; c < ncta; ++c) s += next[c * cta_stride];
  float out = p.alpha * s;
  if (p.beta != 0.f) {
    const void* C =
        static_cast<const char*>(p.c) + b * p.stride_c * static_cast<int64_t>(sizeof(OutT));
    out += p.beta * LoadF<OutT>(C, m * p.ldc + n);
  }
  void* D = static_cast<char*>(p.d) + b * p.stride_d * static_cast<int64_t>(sizeof(OutT));
  StoreF<OutT>(D, m * p.ldd + n, out);
#endif
}

}  // namespace gemm::kernel::sm90::small_m
