// Device code of the SM100 (GB200/B200) persistent 2-SM tcgen05 BF16 GEMM. One 2-CTA cluster
// computes a (256 * kMWaves) x kUmmaN output tile with `tcgen05.mma.cta_group::2` (each CTA:
// 128 * kMWaves rows of X, kUmmaN/2 rows of Y, kMWaves accumulators of 128 x kUmmaN FP32 in its
// TMEM, one per M-wave). Warp roles per CTA:
//   warp 0     TMA producer (both CTAs; completion bytes go to the leader's "full" barrier)
//   warp 1     MMA issuer (leader CTA only; commits multicast to both CTAs' barriers)
//   warp 2     TMEM allocator (cta_group::2: one warp in each CTA)
//   warp 3     Cluster Launch Control scheduler (leader CTA, only when p.use_clc; sm100_clc.h)
//   warps 4-7  epilogue: TMEM -> registers -> SMEM staging -> TMA store (alpha/beta, C by TMA)
// With one M-wave TMEM holds two accumulators so the epilogue of tile i overlaps the MMAs of tile
// i+1; with two M-waves the single accumulator fills all 512 columns.
// Compiled for sm_100a only; the body is empty for any other target.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>

#include "ptx/sm100_clc.cuh"
#include "ptx/sm100_sync.cuh"
#include "ptx/sm100_tma.cuh"
#include "ptx/tcgen05.cuh"
#include "sm100/sm100_clc.h"
#include "sm100/sm100_config.h"
#include "sm100/sm100_desc.h"
#include "sm100/sm100_epilogue_layout.h"
#include "sm100/sm100_params.h"
#include "sm100/sm100_pipeline.h"
#include "sm100/sm100_scheduler.h"

#if defined(__CUDA_ARCH__) &&                                               \
    (defined(__CUDA_ARCH_FEAT_SM100_ALL) ||                                 \
     (defined(__CUDA_ARCH_SPECIFIC__) && __CUDA_ARCH_SPECIFIC__ == 1000) || \
     (defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && __CUDA_ARCH_FAMILY_SPECIFIC__ == 1000))
#define GEMM_SM100_DEVICE_CODE 1
#endif

namespace gemm::kernel::sm100 {

#if defined(GEMM_SM100_DEVICE_CODE)

// Loads one operand's slice of a K block (kRows rows x 64 K) into `dst`, signalling `bar`.
// K-major: one box {64 K, kRows}. MN-major: kRows/64 boxes {64 MN, 64 K}, 8 KiB apart (the
// descriptor's LBO).
// A tile's id in the bounded-wait build's timeout record: block_x in the high 16 bits, block_y
// in the low 16 bits.
__device__ __forceinline__ uint32_t TileTag(const WorkTile& t) {
  return (static_cast<uint32_t>(t.block_x) << 16) | (static_cast<uint32_t>(t.block_y) & 0xffffu);
}

template <bool kMnMajor, int kRows>
__device__ __forceinline__ void LoadOperand(uint32_t dst, const CUtensorMap* map, int32_t row0,
                                            int32_t k0, int32_t batch, uint32_t bar) {
  if constexpr (!kMnMajor) {
    ptx::TmaLoad3d2Cta(dst, map, k0, row0, batch, bar);
  } else {
#pragma unroll
    for (int j = 0; j < kRows / 64; ++j) {
      ptx::TmaLoad3d2Cta(dst + j * 64 * 128, map, row0 + 64 * j, k0, batch, bar);
    }
  }
}

// Shared memory descriptor of an operand stage at `addr`.
template <bool kMnMajor>
__device__ __forceinline__ uint64_t OperandDesc(uint32_t addr) {
  if constexpr (kMnMajor) {
    return MakeMnMajorDesc(addr, 64 * 128);
  } else {
    return MakeKMajorDesc(addr);
  }
}

__device__ __forceinline__ uint32_t PackBf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ float2 UnpackBf16x2(uint32_t v) {
  __nv_bfloat162 b;
  *reinterpret_cast<uint32_t*>(&b) = v;
  return __bfloat1622float2(b);
}

// Where a role of a CTA gets its tiles: the static round robin (TileScheduler::Next) or, with
// Cluster Launch Control, its own cluster's unit and then those of the clusters the leader's
// scheduler cancelled (the response ring of sm100_clc.h). Each role of each CTA holds one.
template <class Sched>
struct TileSource {
  Sched sched;
  ClcCursor cursor;
  PipelineState<kClcStages> st;
  bool clc;
  uint32_t clc_full0;   // this CTA's clc_full[0]; slot i at + 8 i
  uint32_t clc_empty0;  // the LEADER's clc_empty[0] (shared::cluster address)
  uint32_t response0;   // this CTA's response slot 0; slot i at + 16 i

  // Next tile; false when this role is done. `warp_wide`: all 32 lanes of the warp call this
  // together (the response is read by every lane, then lane 0 releases the slot); otherwise a
  // single thread calls it and releases the slot itself.
  __device__ __forceinline__ bool Next(WorkTile* tile, bool warp_wide) {
    if (!clc) return sched.Next(tile);
    for (;;) {
      ClcResponse r;
      if (cursor.NeedsResponse()) {
        ptx::MbarrierWait(clc_full0 + 8 * st.index, st.ConsumerParity(),
                          WaitSite::kSm100ClcResponse);
        r.canceled = ptx::ClcQueryCancel(response0 + 16 * st.index, &r.first_ctaid_x) != 0;
        if (warp_wide) __syncwarp();
        if (!warp_wide || threadIdx.x % 32 == 0) {
          // Generic reads of the slot before the next async-proxy response write into it.
          ptx::FenceProxyAsyncShared();
          ptx::MbarrierArriveCluster(clc_empty0 + 8 * st.index);
        }
        st.Advance();
      }
      const int64_t id = cursor.Next(r);
      if (id < 0) return false;
      if (sched.TileAt(id, tile)) return true;
      // An id past the last unit (not launched that way): skip it, keep the ring in step.
    }
  }
};

#endif  // GEMM_SM100_DEVICE_CODE

template <class Cfg, bool kXMn, bool kYMn>
__global__ void __launch_bounds__(kNumThreads, 1)
    GemmKernel(const __grid_constant__ KernelParams p) {
#if defined(GEMM_SM100_DEVICE_CODE)
  constexpr int kStages = Cfg::kStages;
  constexpr int kUmmaN = Cfg::kUmmaN;
  constexpr int kMWaves = Cfg::kMWaves;
  static_assert(kMWaves == 1 || !kXMn, "M-waves step through a K-major X stage");

  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t raw = ptx::SmemAddr(smem_raw);
  // NOTE: SWIZZLE_128B tiles and descriptors need 1024-byte alignment; the offset is the same in
  // both CTAs, so the peer's barriers and operands sit at the same addresses.
  const uint32_t base = (raw + 1023u) & ~1023u;
  uint8_t* const base_ptr = smem_raw + (base - raw);

  const uint32_t warp = threadIdx.x / 32;
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t rank = ptx::ClusterCtaRank();
  const bool leader = rank == 0;

  const uint32_t bars = base + Cfg::kBarrierOffset;
  auto full_bar = [&](uint32_t s) { return bars + Cfg::FullBar(s) * 8; };
  auto empty_bar = [&](uint32_t s) { return bars + Cfg::EmptyBar(s) * 8; };
  auto tmem_full_bar = [&](uint32_t b) { return bars + Cfg::TmemFullBar(b) * 8; };
  auto tmem_empty_bar = [&](uint32_t b) { return bars + Cfg::TmemEmptyBar(b) * 8; };
  auto c_bar = [&](uint32_t w, uint32_t b) { return bars + Cfg::CBar(w, b) * 8; };
  auto clc_full_bar = [&](uint32_t i) { return bars + Cfg::ClcFullBar(i) * 8; };
  auto clc_empty_bar = [&](uint32_t i) { return bars + Cfg::ClcEmptyBar(i) * 8; };
  const uint32_t clc_response = base + Cfg::kClcResponseOffset;
  const uint32_t tmem_slot = base + Cfg::kTmemSlotOffset;
  const bool clc = p.use_clc != 0;

  const bool grouped = p.group_shapes != nullptr;
  const ProblemShape* shapes = grouped ? p.group_shapes : &p.shape;
  auto maps_of = [&](int32_t problem) { return grouped ? p.group_maps + problem : &p.maps; };

  // ---- set-up: barriers, then TMEM (cta_group::2 needs the peer CTA running) ----
  if (warp == kProducerWarp && lane == 0) {
    if (!grouped) {
      ptx::PrefetchTensorMap(&p.maps.x);
      ptx::PrefetchTensorMap(&p.maps.y);
      ptx::PrefetchTensorMap(&p.maps.d);
    }
    for (int s = 0; s < kStages; ++s) {
      ptx::MbarrierInit(full_bar(s), 2);   // leader's: one expect_tx arrive per CTA
      ptx::MbarrierInit(empty_bar(s), 1);  // one multicast commit
    }
    for (int b = 0; b < Cfg::kAccumStages; ++b) {
      ptx::MbarrierInit(tmem_full_bar(b), 1);                         // one multicast commit
      ptx::MbarrierInit(tmem_empty_bar(b), 2 * kNumEpilogueThreads);  // leader's: all 256
    }
    for (int w = 0; w < kNumEpilogueWarps; ++w) {
      for (int b = 0; b < Cfg::kEpiBuffers; ++b) ptx::MbarrierInit(c_bar(w, b), 1);
    }
    for (int i = 0; i < kClcStages; ++i) {
      ptx::MbarrierInit(clc_full_bar(i), 1);               // the leader's arrive.expect_tx(16)
      ptx::MbarrierInit(clc_empty_bar(i), kClcConsumers);  // leader's: every consumer, both CTAs
    }
    ptx::FenceMbarrierInit();
  }
  __syncwarp();  // barrier.cluster is .aligned: every warp converged
  ptx::ClusterSync();
  if (warp == kTmemWarp) {
    ptx::Tcgen05Alloc2Cta(tmem_slot, Cfg::kTmemCols);
    // We never allocate again: let the next CTA scheduled on this SM allocate once we free.
    ptx::Tcgen05RelinquishAllocPermit2Cta();
  }
  ptx::Tcgen05FenceBeforeThreadSync();
  ptx::ClusterSync();
  ptx::Tcgen05FenceAfterThreadSync();
  const uint32_t tmem_base = *reinterpret_cast<volatile uint32_t*>(base_ptr + Cfg::kTmemSlotOffset);

  using Sched = TileScheduler<Cfg::kClusterBlockX, Cfg::kClusterBlockY, Cfg::kBlockK>;
  const int32_t cluster_id = ClusterIdOf(blockIdx.x);
  TileSource<Sched> src{Sched(shapes, p.num_problems, !grouped, p.group_x, cluster_id,
                              static_cast<int32_t>(gridDim.x / 2)),
                        ClcCursor(cluster_id),
                        PipelineState<kClcStages>{},
                        clc,
                        clc_full_bar(0),
                        ptx::MapaShared(clc_empty_bar(0), 0),
                        clc_response};
  WorkTile tile;

  if (warp == kProducerWarp) {
    // ---- TMA producer (both CTAs) ----
    if (lane == 0) {
      PipelineState<kStages> st;
      while (src.Next(&tile, /*warp_wide=*/false)) {
        const ProblemMaps* maps = maps_of(tile.problem);
        if (grouped) {  // maps copied to global memory by the host: acquire before TMA reads them
          ptx::FenceTensorMapAcquire(&maps->x);
          ptx::FenceTensorMapAcquire(&maps->y);
        }
        const int32_t batch = grouped ? 0 : tile.problem;
        const int32_t x0 = tile.block_x * Cfg::kClusterBlockX + rank * Cfg::kRowsX;
        const int32_t y0 = tile.block_y * Cfg::kClusterBlockY + rank * Cfg::kRowsY;
        for (int32_t kb = 0; kb < tile.num_k_blocks; ++kb) {
          ptx::MbarrierWait(empty_bar(st.index), st.ProducerParity(), WaitSite::kSm100ProducerEmpty,
                            TileTag(tile));
          const uint32_t leader_full = ptx::MapaShared(full_bar(st.index), 0);
          ptx::MbarrierArriveExpectTxCluster(leader_full, Cfg::kStageBytes);
          const int32_t k0 = (tile.k_block_begin + kb) * Cfg::kBlockK;
          LoadOperand<kXMn, Cfg::kRowsX>(base + Cfg::kXOffset + st.index * Cfg::kXStageBytes,
                                         &maps->x, x0, k0, batch, leader_full);
          LoadOperand<kYMn, Cfg::kRowsY>(base + Cfg::kYOffset + st.index * Cfg::kYStageBytes,
                                         &maps->y, y0, k0, batch, leader_full);
          st.Advance();
        }
      }
      // NOTE: the leader's MMA warp commits to our "empty" barriers; wait for the last lap of
      // commits so no remote arrive targets this CTA's shared memory after it exits.
      for (int s = 0; s < kStages; ++s) {
        ptx::MbarrierWait(empty_bar(st.index), st.ProducerParity(), WaitSite::kSm100ProducerDrain);
        st.Advance();
      }
    }
    __syncwarp();
  } else if (warp == kMmaWarp) {
    // ---- MMA issuer (leader CTA only; one instruction drives both SMs' tensor cores) ----
    if (leader) {
      constexpr uint32_t kIdesc = MakeInstrDesc(Cfg::kUmmaM, kUmmaN, kXMn ? Major::kMN : Major::kK,
                                                kYMn ? Major::kMN : Major::kK);
      constexpr uint32_t kXStep = KSliceAdvanceBytes(kXMn ? Major::kMN : Major::kK, Cfg::kUmmaK);
      constexpr uint32_t kYStep = KSliceAdvanceBytes(kYMn ? Major::kMN : Major::kK, Cfg::kUmmaK);
      PipelineState<kStages> st;
      PipelineState<Cfg::kAccumStages> acc;
      while (src.Next(&tile, /*warp_wide=*/true)) {
        ptx::MbarrierWait(tmem_empty_bar(acc.index), acc.ProducerParity(),
                          WaitSite::kSm100MmaTmemEmpty, TileTag(tile));
        ptx::Tcgen05FenceAfterThreadSync();
        const uint32_t d_tmem = tmem_base + AccumColumn(acc.index, 0, kUmmaN, kMWaves);
        for (int32_t kb = 0; kb < tile.num_k_blocks; ++kb) {
          ptx::MbarrierWait(full_bar(st.index), st.ConsumerParity(), WaitSite::kSm100MmaFull,
                            TileTag(tile));
          ptx::Tcgen05FenceAfterThreadSync();
          if (lane == 0) {
            const uint64_t x_desc =
                OperandDesc<kXMn>(base + Cfg::kXOffset + st.index * Cfg::kXStageBytes);
            const uint64_t y_desc =
                OperandDesc<kYMn>(base + Cfg::kYOffset + st.index * Cfg::kYStageBytes);
#pragma unroll
            for (int k = 0; k < Cfg::kBlockK / Cfg::kUmmaK; ++k) {
              // M-waves share the Y slice (as DeepGEMM: K outer, waves inner);
              // wave w reads X rows w*128.. of each CTA's stage into its own TMEM columns.
#pragma unroll
              for (int w = 0; w < kMWaves; ++w) {
                // Accumulate except on the tile's first K slice, for every wave alike.
                ptx::Tcgen05MmaBf16Cta2(
                    d_tmem + AccumColumn(0, w, kUmmaN, kMWaves),
                    AdvanceDesc(x_desc, WaveXOffsetBytes(w, Cfg::kWaveRows) + k * kXStep),
                    AdvanceDesc(y_desc, k * kYStep), kIdesc, AccumulateFlag(kb, k));
              }
            }
            // Frees the stage in BOTH CTAs once these MMAs have read it.
            ptx::Tcgen05CommitMulticast2Cta(empty_bar(st.index), 0x3);
          }
          __syncwarp();
          st.Advance();
        }
        if (lane == 0) ptx::Tcgen05CommitMulticast2Cta(tmem_full_bar(acc.index), 0x3);
        __syncwarp();
        acc.Advance();
      }
    }
  } else if (warp >= kFirstEpilogueWarp) {
    // ---- epilogue (both CTAs): TMEM -> registers -> SMEM staging -> TMA store ----
    const uint32_t ew = warp - kFirstEpilogueWarp;
    const uint32_t lane_base = WarpTmemLane(warp);
    PipelineState<Cfg::kAccumStages> acc;
    uint32_t c_phases = 0;  // bit b: parity to wait for on c_bar(ew, b) (no local-memory array)
    uint32_t buf = 0;
    while (src.Next(&tile, /*warp_wide=*/true)) {
      const ProblemMaps* maps = maps_of(tile.problem);
      if (grouped && lane == 0) {  // the lane that issues this tile's C loads and D stores
        ptx::FenceTensorMapAcquire(&maps->c);
        ptx::FenceTensorMapAcquire(&maps->d);
      }
      const ProblemShape& shape = shapes[grouped ? tile.problem : 0];
      const float alpha = shape.alpha;
      const float beta = shape.beta;
      const bool has_c = beta != 0.0f;
      const int32_t batch = grouped ? 0 : tile.problem;
      // Split-K partials go to slice (problem * splits + split) of the FP32 workspace map.
      const int32_t store_batch = grouped ? 0 : tile.problem * Sched::SplitsOf(shape) + tile.split;
      const int32_t y_col0 = tile.block_y * Cfg::kClusterBlockY;

      ptx::MbarrierWait(tmem_full_bar(acc.index), acc.ConsumerParity(),
                        WaitSite::kSm100EpilogueTmemFull, TileTag(tile));
      ptx::Tcgen05FenceAfterThreadSync();

#pragma unroll 1
      for (int wc = 0; wc < kMWaves * Cfg::kEpiChunks; ++wc) {
        const uint32_t wave = static_cast<uint32_t>(wc / Cfg::kEpiChunks);
        const int chunk = wc % Cfg::kEpiChunks;
        const int32_t x_row0 = static_cast<int32_t>(
            EpilogueRow(tile.block_x, Cfg::kClusterBlockX, rank, Cfg::kRowsX, wave, ew));
        const uint32_t t_acc =
            TmemAddr(tmem_base, lane_base, AccumColumn(acc.index, wave, kUmmaN, kMWaves));
        const uint32_t stage_off =
            Cfg::kEpiOffset + (ew * Cfg::kEpiBuffers + buf) * Cfg::kEpiBufferBytes;
        const uint32_t stage_addr = base + stage_off;
        uint8_t* const stage = base_ptr + stage_off;
        // D/C box coordinates (inner, outer): D row-major [M, N].
        const int32_t c0 = Cfg::kSwapAB ? x_row0 : y_col0 + chunk * Cfg::kEpiColsPerChunk;
        const int32_t c1 = Cfg::kSwapAB ? y_col0 + chunk * Cfg::kEpiColsPerChunk : x_row0;

        // The store issued from this buffer two chunks ago must have read it.
        if (lane == 0) ptx::BulkWaitGroupRead<Cfg::kEpiBuffers - 1>();
        __syncwarp();
        if (has_c) {
          const uint32_t bar = c_bar(ew, buf);
          if (lane == 0) {
            ptx::MbarrierArriveExpectTx(bar, Cfg::kEpiChunkBytes);
            ptx::TmaLoad3d(stage_addr, &maps->c, c0, c1, batch, bar);
          }
          ptx::MbarrierWait(bar, (c_phases >> buf) & 1u, WaitSite::kSm100EpilogueC, TileTag(tile));
          c_phases ^= 1u << buf;
        }

        constexpr int kLoads = Cfg::kEpiColsPerChunk / 32;
        uint32_t r[kLoads][32];
        __syncwarp();  // tcgen05.ld is warp-collective: reconverge after the per-lane C wait
#pragma unroll
        for (int h = 0; h < kLoads; ++h) {
          ptx::Tcgen05Ld32x32bX32(t_acc + chunk * Cfg::kEpiColsPerChunk + h * 32, r[h]);
        }
        ptx::Tcgen05WaitLd();
        if (wc == kMWaves * Cfg::kEpiChunks - 1) {
          // Accumulator drained: hand it back to the leader's MMA warp (all 256 threads arrive).
          ptx::Tcgen05FenceBeforeThreadSync();
          ptx::MbarrierArriveRemote(ptx::MapaShared(tmem_empty_bar(acc.index), 0));
        }

        if constexpr (!Cfg::kSwapAB) {
          // Thread = output row; 8 swizzled 16-byte chunks of 128 bytes.
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            uint4* const slot = reinterpret_cast<uint4*>(stage + SwizzledChunkOffset(lane, j));
            if constexpr (Cfg::kOutF32) {
              float v[4];
#pragma unroll
              for (int q = 0; q < 4; ++q) v[q] = alpha * __uint_as_float(r[0][j * 4 + q]);
              if (has_c) {
                const uint4 c = *slot;
                v[0] += beta * __uint_as_float(c.x);
                v[1] += beta * __uint_as_float(c.y);
                v[2] += beta * __uint_as_float(c.z);
                v[3] += beta * __uint_as_float(c.w);
              }
              *slot = make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]),
                                 __float_as_uint(v[2]), __float_as_uint(v[3]));
            } else {
              float v[8];
#pragma unroll
              for (int q = 0; q < 8; ++q) {
                const int col = j * 8 + q;
                v[q] = alpha * __uint_as_float(r[col / 32][col % 32]);
              }
              if (has_c) {
                const uint4 c = *slot;
                const uint32_t cw[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                  const float2 cf = UnpackBf16x2(cw[q]);
                  v[2 * q] += beta * cf.x;
                  v[2 * q + 1] += beta * cf.y;
                }
              }
              *slot = make_uint4(PackBf16x2(v[0], v[1]), PackBf16x2(v[2], v[3]),
                                 PackBf16x2(v[4], v[5]), PackBf16x2(v[6], v[7]));
            }
          }
        } else {
          // Swap-AB: thread = output column n, registers = 32 consecutive rows m.
#pragma unroll
          for (int j = 0; j < 32; ++j) {
            const uint32_t off = TransposedOffset(j, lane, Cfg::kOutBytes);
            float v = alpha * __uint_as_float(r[0][j]);
            if constexpr (Cfg::kOutF32) {
              float* const slot = reinterpret_cast<float*>(stage + off);
              if (has_c) v += beta * *slot;
              *slot = v;
            } else {
              __nv_bfloat16* const slot = reinterpret_cast<__nv_bfloat16*>(stage + off);
              if (has_c) v += beta * __bfloat162float(*slot);
              *slot = __float2bfloat16_rn(v);
            }
          }
        }
        ptx::FenceProxyAsyncShared();
        __syncwarp();
        if (lane == 0) {
          ptx::TmaStore3d(&maps->d, stage_addr, c0, c1, store_batch);
          ptx::BulkCommitGroup();
        }
        buf ^= 1u;
      }
      acc.Advance();
    }
    if (lane == 0) ptx::BulkWaitGroup<0>();
    __syncwarp();
  } else if (warp == kClcWarp && clc && leader) {
    // ---- Cluster Launch Control scheduler (leader CTA): cancel a not-yet-launched cluster and
    // publish the response to both CTAs; stop after the first failure (PTX: no try_cancel after
    // a CTA has observed one). Every response issued is consumed by all kClcConsumers. ----
    if (lane == 0) {
      PipelineState<kClcStages> st;
      for (;;) {
        ptx::MbarrierWait(clc_empty_bar(st.index), st.ProducerParity(), WaitSite::kSm100ClcEmpty);
        const uint32_t full = clc_full_bar(st.index);
        ptx::MbarrierArriveExpectTx(full, kClcResponseBytes);
        ptx::MbarrierArriveExpectTxCluster(ptx::MapaShared(full, 1), kClcResponseBytes);
        ptx::ClcTryCancelMulticast(clc_response + 16 * st.index, full);
        ptx::MbarrierWait(full, st.ConsumerParity(), WaitSite::kSm100ClcFull);
        uint32_t first_x = 0;
        const uint32_t canceled = ptx::ClcQueryCancel(clc_response + 16 * st.index, &first_x);
        ptx::FenceProxyAsyncShared();
        ptx::MbarrierArriveCluster(ptx::MapaShared(clc_empty_bar(st.index), 0));
        st.Advance();
        if (!canceled) break;
      }
    }
    __syncwarp();
  }

  // ---- tear-down: both CTAs done with TMEM and each other's shared memory ----
  ptx::Tcgen05FenceBeforeThreadSync();
  ptx::ClusterSync();
  if (warp == kTmemWarp) {
    ptx::Tcgen05FenceAfterThreadSync();
    ptx::Tcgen05Dealloc2Cta(tmem_base, Cfg::kTmemCols);
  }
#endif  // GEMM_SM100_DEVICE_CODE
}

}  // namespace gemm::kernel::sm100
