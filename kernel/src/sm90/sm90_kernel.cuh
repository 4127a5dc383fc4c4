// Device code of the SM90 persistent GEMM: D = alpha * A * op(B) + beta * C, BF16 in, FP32
// accumulate, BF16 or FP32 out.
//
// One CTA = 3 warpgroups (384 threads), one CTA per SM, persistent over cluster tiles:
//   WG0  producer: one thread issues TMA loads (128B swizzle) into a `stages`-deep ring of
//        shared-memory slots guarded by full/empty mbarriers; with a 2-CTA cluster each CTA
//        loads half of the B tile and multicasts it to both (B is shared along M).
//        setmaxnreg lowers it to 40 registers.
//   WG1,2 consumers: each owns BM/2 rows x BN columns of the BM x BN tile (128x256, 256x128 or
//        128x128), or, in the 64-row decode tiles (64x128, 64x256), all 64 rows x BN/2 columns
//        (both warpgroups busy on M <= 64 instead of one computing zero rows), and issues
//        wgmma.m64nWk16 (W = the warpgroup's columns; one per 64 rows) from shared-memory
//        descriptors (B K-major, or N-major with the transpose bit), keeps one wgmma group in
//        flight and frees a slot as soon as the wgmma that read it retired. setmaxnreg raises them
//        to 232 registers (W/2 accumulators). Epilogue: alpha/beta(C) in registers -> STSM (BF16) /
//        st.shared (FP32) into two 128B-swizzled 16-row staging tiles per warp, filled in pairs
//        under one proxy fence -> TMA stores (hardware clips M/N edges). The staging tiles are
//        buffers of their own, or, on the tiles where that measured faster for the pipeline slot
//        it frees (EpilogueInSlot), the unit's last slot, which the consumers release once the
//        stores have read it.
// Work units are decoded one ahead (scheduler.h's multiply-shift divisors): the producer right
// after issuing a unit's first load, the consumers while a unit's first wgmmas run, so no unit
// starts with ~1,000 cycles of index arithmetic on its critical path.
// Single-CTA clusters load their first unit's first `stages` k-blocks in the prologue, before
// the CTA barrier (the first load left ~2,150 cycles after entry when the producer issued it).
// Edges: TMA zero-fills out-of-bounds loads (N and K tails, and M edges of grouped members of
// more than one A box), so any M, N, K >= 1 works. Single-problem launches load no A rows past M
// (KernelParams::tma_a_tail), nor do group members below one A box (ProblemParams::a_short):
// the zero-fill of those rows was slow.
// Swap-AB (kSwap, TileConfig::swap_ab): the host passes B as the kernel's A and A [M,K] as its B,
// so the tile is 128 rows of N by BN (144-240) rows of M and the epilogue stores the accumulators
// transposed (sm90_swap_epilogue.cuh); C is read transposed too. B [K,N] is then an MN-major A
// (loaded in 64-column boxes, read with wgmma's A-transpose bit).
// Tail split-K and stream-K (sm90_split.h): units of the last wave may cover a K range of a
// tile; non-owner units store FP32 partials to the workspace and publish a flag (release), the
// owner waits for the flags (acquire), adds the partials into its accumulators and runs the
// epilogue.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"
#include "scheduler.h"
#include "sm90/sm90_epilogue_values.cuh"
#include "sm90/sm90_params.h"
#include "sm90/sm90_split.h"
#include "sm90/sm90_swap_epilogue.cuh"

namespace gemm::kernel::sm90 {

inline constexpr int kBlockK = 64;
inline constexpr int kThreads = 384;
inline constexpr int kEpiBufBytes = 16 * 128;  // one warp's 16-row x 128-byte staging tile
inline constexpr int kUnitRecordBytes = 32;    // the producer's decoded next work unit

static_assert(16 * kEpiBufBytes == kEpilogueBufferBytes && kBlockK == 64 && kUnitRecordBytes == 32,
              "Sm90SmemBytes (sm90_tiles.h) sizes the carve-up below");

template <int BM, int BN, bool kF32Out, bool kBKN, int P, bool kSwap = false>
__global__ void __launch_bounds__(kThreads, 1)
    Sm90GemmKernel(const __grid_constant__ KernelParams<P> params) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace gemm::kernel::ptx;
  static_assert(kSwap ? IsSm90SwapTile(BM, BN) && P == 1 : IsSm90Tile(BM, BN),
                "not one of the kernel's tiles (sm90_tiles.h)");
  // Which operand is MN-major in shared memory: B [K,N] is the kernel's B, or with swap-AB its A
  // (then loaded as 64-column boxes like B's, and read by wgmma with the A-transpose bit).
  constexpr bool kAMN = kSwap && kBKN;
  constexpr bool kBMN = kBKN && !kSwap;
  constexpr bool kSplitN = BM == 64;              // warpgroups split the columns, not rows
  constexpr int kWgRows = kSplitN ? 64 : BM / 2;  // rows per consumer warpgroup
  constexpr int kWgCols = kSplitN ? BN / 2 : BN;  // columns per consumer warpgroup
  constexpr int kHalves = kWgRows / 64;           // m64 wgmmas per consumer warpgroup and k16 step
  constexpr int kABytes = BM * kBlockK * 2;
  constexpr int kABox = BM < 128 ? BM : 128;  // rows per A box
  constexpr int kBBytes = BN * kBlockK * 2;
  // The epilogue stages in the unit's last slot (EpilogueInSlot), so the CTA has no buffers for it.
  constexpr bool kEpiInSlot = EpilogueInSlot(BM, BN);
  const int stages = params.stages;
  const int cs = params.cluster_m;

  extern __shared__ uint8_t smem_raw[];
  // NOTE: 128B-swizzled TMA boxes and WGMMA descriptors assume 1024-byte aligned buffers.
  const uint32_t smem_base = (SmemAddr(smem_raw) + 1023u) & ~1023u;
  const uint32_t s_a = smem_base;
  const uint32_t s_b = s_a + stages * kABytes;
  const uint32_t s_epi = s_b + stages * kBBytes;
  const uint32_t s_bar = s_epi + (kEpiInSlot ? 0 : 16 * kEpiBufBytes);
  auto full_bar = [&](int s) { return s_bar + s * 8; };
  auto empty_bar = [&](int s) { return s_bar + (stages + s) * 8; };
  const uint32_t s_rec = s_bar + 2 * stages * 8;

  const int tid = threadIdx.x;
  const int wg = tid / 128;
  const uint32_t rank = cs > 1 ? ClusterCtaRank() : 0;

  // Work units (whole cluster tiles, then the tail's K pieces), 32-bit: the launcher keeps their
  // count below kMaxTiles.
  const SplitPlan plan{params.dp_tiles,    params.tail_tiles, params.splits,
                       params.sk_clusters, params.sk_units,   params.sk_k_blocks};
  const int32_t units = static_cast<int32_t>(TotalUnits(plan));
  const int32_t step = static_cast<int32_t>(gridDim.x / cs);  // clusters in the grid
  const int32_t first_unit = static_cast<int32_t>(blockIdx.x / cs);
  // One work unit: its tile, range of k-blocks and partial exchange. The consumers decode the
  // next unit while the current one's first wgmmas run, so none of this is on a unit's path.
  struct Unit {
    TileCoord tc;
    int32_t kb_begin, kb_end;
    // Its partial exchange: with `groups` -1 it writes its partial to slot group `group`; with
    // `groups` > 0 it adds slot groups [group, group + groups) and stores the tile; 0: a whole
    // tile. (Two registers: a third made the 256x128 consumers spill.)
    int32_t group;
    int32_t groups;
  };
  // NOTE: single-problem launches (P == 1) index their problem with a constant, so its fields are
  // read as constant-bank operands instead of by register-indexed loads on each unit's path.
  auto prob = [](int32_t p) { return P == 1 ? 0 : p; };
  auto decode = [&](int32_t u) {
    Unit x;
    const UnitWork w = DecodeUnit(u, plan);
    x.tc = DecodeTile(w.tile, params.problems, P == 1 ? 1 : params.num_problems, params.group_m);
    SplitKRange(w, plan, (params.problems[prob(x.tc.problem)].k + kBlockK - 1) / kBlockK,
                &x.kb_begin, &x.kb_end);
    ReadGroups(w, plan, &x.group, &x.groups);
    if (!IsOwner(w, plan)) x.group = WriteGroup(w, plan), x.groups = -1;
    return x;
  };
  // The producer's record of its next unit (shared memory: see the producer).
  volatile int32_t* const rec =
      reinterpret_cast<volatile int32_t*>(smem_raw + (s_rec - SmemAddr(smem_raw)));
  auto decode_to_record = [&](int32_t u) {
    const Unit x = decode(u);
    rec[0] = x.tc.problem, rec[1] = x.tc.batch;
    rec[2] = (x.tc.m_cluster * cs + static_cast<int>(rank)) * BM, rec[3] = x.tc.n_block * BN;
    rec[4] = x.kb_begin, rec[5] = x.kb_end;
  };
  // Issues the TMA loads of k-block `kb` of a unit into slot `stage`, completing on its full
  // barrier: A's rows, then B's columns, multicast across the cluster (each CTA loads its share)
  // or, with `multicast` false, all loaded by this CTA.
  auto issue_loads = [&](const CUtensorMap* tma_a, const CUtensorMap* tma_b, int32_t batch, int m0,
                         int n0, int kb, int stage, bool multicast, bool clip, int m) {
    const uint32_t full = full_bar(stage);
    if constexpr (kAMN) {
      // A [K, rows] (swap-AB over B [K,N]): two 64-column (128-byte) boxes of 64 K rows.
#pragma unroll
      for (int j = 0; j < BM / 64; ++j) {
        TmaLoad3d(tma_a, s_a + stage * kABytes + j * 64 * 128, full, m0 + j * 64, kb * kBlockK,
                  batch);
      }
    }
#pragma unroll
    for (int r = 0; r < (kAMN ? 0 : (BM + 127) / 128); ++r) {  // boxes of min(BM, 128) A rows
      const int row0 = m0 + r * 128;
      const CUtensorMap* map = tma_a;
      if (clip) {
        // No rows past M (`m`) are loaded: boxes past M are skipped, and the partial box goes
        // through a map whose box ends at M (a single problem's tail map; a group member below
        // one box has such a box in its own map). Those shared-memory rows hold stale values,
        // and the accumulator rows they feed are never stored.
        const int left = m - row0;
        if (left <= 0) continue;
        if (P == 1 && left < kABox) map = &params.tma_a_tail;
      }
      TmaLoad3d(map, s_a + stage * kABytes + r * 128 * 128, full, kb * kBlockK, row0, batch);
    }
    const uint32_t b_dst = s_b + stage * kBBytes;
    const uint16_t mask = static_cast<uint16_t>((1u << cs) - 1);
    if constexpr (kBMN) {
      // B [K,N]: 64-column (128-byte) boxes of 64 K rows, one 8 KB block each.
      // NOTE: fixed trip counts (cs is 1 or 2): a loop bounded by a runtime division cost the
      // producer ~25 instructions per k-block, and with runtime bounds the 40-register producer
      // spilled.
      if (multicast) {
        const int j0 = static_cast<int>(rank) * (BN / 128);
#pragma unroll
        for (int jj = 0; jj < BN / 128; ++jj) {
          TmaLoad3dMulticast(tma_b, b_dst + (j0 + jj) * 64 * 128, full, mask, n0 + (j0 + jj) * 64,
                             kb * kBlockK, batch);
        }
      } else {
#pragma unroll
        for (int j = 0; j < BN / 64; ++j) {
          TmaLoad3d(tma_b, b_dst + j * 64 * 128, full, n0 + j * 64, kb * kBlockK, batch);
        }
      }
    } else {
      // B [N,K]: boxes of BN/cs rows of 128 bytes (cs is 1 or 2), this CTA's one multicast or
      // all of them loaded here.
      if (multicast) {
        TmaLoad3dMulticast(tma_b, b_dst + rank * (BN / 2) * 128, full, mask, kb * kBlockK,
                           n0 + static_cast<int>(rank) * (BN / 2), batch);
      } else if (cs > 1) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          TmaLoad3d(tma_b, b_dst + h * (BN / 2) * 128, full, kb * kBlockK, n0 + h * (BN / 2),
                    batch);
        }
      } else {
        TmaLoad3d(tma_b, b_dst, full, kb * kBlockK, n0, batch);
      }
    }
  };
  // Whether a unit at row m0 stops its A loads at M (issue_loads), and the bytes of A and B
  // each of its k-blocks then loads. Once per unit: the producer's k-loop only tests `clip`.
  auto a_clip = [&](int32_t problem, int m0) {
    if constexpr (P == 1) return params.a_clip && m0 + BM > params.problems[0].m;
    return params.problems[problem].a_short != 0;
  };
  auto stage_bytes = [&](int m, int m0, bool clip) -> uint32_t {
    const int a_rows = clip ? min(max(m - m0, 0), BM) : BM;
    return static_cast<uint32_t>(a_rows) * (kBlockK * 2) + kBBytes;
  };
  // NOTE: the producer's first unit is decoded before the prologue's barrier, by the producer
  // warpgroup's second warp, so its parameter loads overlap the barrier set-up instead of
  // delaying the first TMA load (measured: ~700 cycles of decode after the prologue). The
  // consumers decode theirs while the first loads are in flight. (Decoded before the barrier,
  // the consumers' first unit made the 128x256 kernels spill.)
  if (first_unit < units && tid == 32) decode_to_record(first_unit);

  if (tid == 0) {
    for (int s = 0; s < stages; ++s) {
      MbarInit(full_bar(s), 1);
      // NOTE: one arrival per consumer warpgroup (2 per CTA) from every CTA that reads the
      // slot's multicast data, since a peer's TMA writes into this CTA's slot too.
      MbarInit(empty_bar(s), 2 * cs);
    }
    FenceBarrierInit();
    FenceProxyAsyncShared();  // the barriers' init before the early loads' complete_tx
    for (int p = 0; p < params.num_problems; ++p) {
      for (int i = 0; i < 3; ++i) PrefetchTensorMap(&params.tma[3 * p + i]);
    }
    if (P == 1 && params.a_clip) PrefetchTensorMap(&params.tma_a_tail);
  }
  // NOTE: the first unit's first `stages` k-blocks are loaded before the prologue barrier, by the
  // thread that initialized the barriers, as soon as the second warp has decoded the unit: the
  // clock64 trace measured ~2,150 cycles from entry to the first load when the producer issued
  // it after the barrier (barrier, setmaxnreg and the loop's first instructions, most of them
  // instruction-cache misses). Single-CTA clusters only: in a 2-CTA cluster the peer's barriers
  // may not be initialized yet, and loading all of B in each CTA for those k-blocks instead of
  // multicasting it made the batched set 3.5% slower (H200, gemm_bench).
  int issued = 0;  // k-blocks of the first unit already loaded (thread 0)
  if (cs == 1 && first_unit < units && tid < 64 &&
      !(params.debug_flags & (kDebugNoLoads | kDebugExitEarly))) {
    NamedBarrierSync(2, 64);  // thread 32's record of the first unit
    if (tid == 0) {
      const int32_t problem = rec[0], batch = rec[1], m0 = rec[2], n0 = rec[3];
      const int32_t kb_begin = rec[4], kb_end = rec[5];
      issued = min(stages, kb_end - kb_begin);
      const bool clip = a_clip(problem, m0);
      const int m = params.problems[prob(problem)].m;
      const uint32_t tx = stage_bytes(m, m0, clip);
      for (int i = 0; i < issued; ++i) {
        MbarArriveExpectTx(full_bar(i), tx);
        issue_loads(&params.tma[3 * prob(problem) + kTmaA], &params.tma[3 * prob(problem) + kTmaB],
                    batch, m0, n0, kb_begin + i, i, false, clip, m);
      }
      rec[4] = kb_begin + issued;  // the producer's loop goes on from there
    }
  }
  if (cs > 1) {
    ClusterSync();
  } else {
    __syncthreads();
  }
  if (params.debug_flags & kDebugExitEarly) return;  // timing of launch + prologue only

  if (wg == 0) {
    // ---------------- producer ----------------
    WarpgroupRegDealloc<40>();
    if (tid == 0) {
      int stage = issued == stages ? 0 : issued;
      uint32_t phase = issued == stages ? 1 : 0;
      // What the producer needs of one work unit.
      struct Loads {
        int32_t problem, batch, m0, n0, kb_begin, kb_end;
      };
      // NOTE: the decoded next unit waits in shared memory, not in registers: held in registers
      // across the k-loop it made the 40-register producer spill.
      for (int32_t u = first_unit; u < units; u += step) {
        const Loads cur{rec[0], rec[1], rec[2], rec[3], rec[4], rec[5]};
        // NOTE: the next unit is decoded right after this unit's first load is issued, while the
        // producer would wait for a free slot anyway, so that the next unit's first load goes out
        // as soon as its slot frees (the trace measured the next unit's first load arriving
        // after the consumers had finished their epilogue).
        const int32_t u_next = u + step;
        bool decoded = false;
        const CUtensorMap* tma_a = &params.tma[3 * prob(cur.problem) + kTmaA];
        const CUtensorMap* tma_b = &params.tma[3 * prob(cur.problem) + kTmaB];
        const int m0 = cur.m0, n0 = cur.n0;
        const bool clip = a_clip(cur.problem, m0);
        const int m = params.problems[prob(cur.problem)].m;
        const uint32_t tx = stage_bytes(m, m0, clip);
        const int32_t batch = cur.batch;
        for (int kb = cur.kb_begin; kb < cur.kb_end; ++kb) {
          if (kb == cur.kb_begin + 1 && u_next < units) {
            decode_to_record(u_next);
            decoded = true;
          }
          MbarWait(empty_bar(stage), phase ^ 1, WaitSite::kSm90ProducerEmpty, u);
          const uint32_t full = full_bar(stage);
          if (params.debug_flags & kDebugNoLoads) {
            MbarArrive(full);
            if (++stage == stages) {
              stage = 0;
              phase ^= 1;
            }
            continue;
          }
          MbarArriveExpectTx(full, tx);
          issue_loads(tma_a, tma_b, batch, m0, n0, kb, stage,
                      cs > 1 && !(params.debug_flags & kDebugNoMulticast), clip, m);
          if (++stage == stages) {
            stage = 0;
            phase ^= 1;
          }
        }
        if (!decoded && u_next < units) decode_to_record(u_next);
      }
    }
  } else {
    // ---------------- consumers ----------------
    WarpgroupRegAlloc<232>();
    const int wgi = wg - 1;
    const int ltid = tid - wg * 128;
    const int warp = ltid / 32;
    const int lane = tid % 32;
    float acc[kHalves][kWgCols / 2];
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
#pragma unroll
      for (int i = 0; i < kWgCols / 2; ++i) acc[h][i] = 0.0f;
    }
    int stage = 0;
    uint32_t phase = 0;
    // NOTE: each consumer warp stages and TMA-stores its own 16 rows (two 2 KB buffers), so the
    // epilogue needs only __syncwarp, never a 128-thread barrier (measured: the epilogue was
    // worth ~3% of the kernel's time with warpgroup-wide staging).
    const uint32_t stg0 = s_epi + (wgi * 4 + warp) * 2 * kEpiBufBytes;
    // With the epilogue in the slot: this warp's 4 KB of slot `s`, in 16 KB per warpgroup (the
    // first's in the slot's 128 A rows, the second's in its B rows).
    static_assert(!kEpiInSlot || (kABytes >= 16 * 1024 && kBBytes >= 16 * 1024));
    auto slot_staging = [&](int s) -> uint32_t {
      const uint32_t wg_base = wgi == 0 ? s_a + s * kABytes : s_b + s * kBBytes;
      return wg_base + warp * 2 * kEpiBufBytes;
    };
    // Slot-0 descriptors of this warpgroup's A rows / B columns (128 bytes of K per row in either
    // layout); MN-major: 64-column chunks 8 KB apart (a warpgroup's 64 A rows are one chunk, at
    // the same offset as its 64 K-major rows).
    const uint64_t desc_a0 =
        MakeSmemDescSw128(s_a + (kSplitN ? 0 : wgi * kWgRows * 128), kAMN ? 64 * 128 : 16, 1024);
    const uint64_t desc_b0 =
        MakeSmemDescSw128(s_b + (kSplitN ? wgi * kWgCols * 128 : 0), kBMN ? 64 * 128 : 16, 1024);

    // A wgmma is one warpgroup operation: once this warp's wait_group has seen it retire, no warp
    // of the warpgroup reads its slot any more, so one thread per warpgroup and destination CTA
    // signals (warp w -> CTA w), not every warp.
    auto release = [&](int s) {
      if (lane != 0 || warp >= cs) return;
      if (cs > 1) {
        MbarArriveCluster(empty_bar(s), warp);
      } else {
        MbarArrive(empty_bar(s));
      }
    };

    // NOTE: the next unit is decoded while the first k-block's wgmmas run, so a unit starts
    // with its coordinates known.
    Unit cur{}, next{};
    if (first_unit < units) cur = decode(first_unit);
    for (int32_t u = first_unit; u < units; u += step, cur = next) {
      const bool have_next = u + step < units;
      if (cur.kb_begin >= cur.kb_end) {  // past the end of a stream-K share: nothing to do
        if (have_next) next = decode(u + step);
        continue;
      }
      bool decoded = false;
      const TileCoord& tc = cur.tc;
      const ProblemParams& pp = params.problems[prob(tc.problem)];
      const int32_t kb_begin = cur.kb_begin, kb_end = cur.kb_end;

      int prev_stage = 0;
      for (int kb = kb_begin; kb < kb_end; ++kb) {
        MbarWait(full_bar(stage), phase, WaitSite::kSm90ConsumerFull, u);
        WgmmaFence();
        // Descriptors of this stage: the slot-0 descriptor's low word plus the byte offset / 16
        // in its start-address field (never carries: shared addresses stay below 2^18); the high
        // word is a compile-time constant. Measured with the producer change above (ncu,
        // 4096^3): 29.8 M -> 22.9 M instructions, tensor pipe 84.4% -> 86.6% active.
        const uint32_t da_s = static_cast<uint32_t>(desc_a0) + stage * (kABytes >> 4);
        const uint32_t db_s = static_cast<uint32_t>(desc_b0) + stage * (kBBytes >> 4);
        constexpr uint64_t kHiA =
            MakeSmemDescSw128(0, kAMN ? 64 * 128 : 16, 1024) & 0xffffffff00000000ull;
        constexpr uint64_t kHiB =
            MakeSmemDescSw128(0, kBMN ? 64 * 128 : 16, 1024) & 0xffffffff00000000ull;
#pragma unroll
        for (int ks = 0; ks < kBlockK / 16; ++ks) {
          // B: K-major like A (32 bytes per 16 K), or N-major: 16 K rows = two 8-row groups of
          // 1024 bytes.
          const uint64_t db = kHiB | (db_s + (kBMN ? ks * (2048 >> 4) : ks * (32 >> 4)));
#pragma unroll
          for (int h = 0; h < kHalves; ++h) {
            // A: K-major, 16 K elements = 32 bytes inside the swizzle atom; MN-major (one m64
            // half only), 16 K rows like B's.
            const uint64_t da =
                kHiA | (da_s + h * ((64 * 128) >> 4) + (kAMN ? ks * (2048 >> 4) : ks * (32 >> 4)));
            WgmmaBf16<kWgCols, kBMN ? 1 : 0, kAMN ? 1 : 0>::Mma(
                acc[h], da, db, (kb != kb_begin || ks != 0) ? 1u : 0u);
          }
        }
        WgmmaCommit();
        if (kb == kb_begin && have_next) {
          next = decode(u + step);
          decoded = true;
        }
        if (kb > kb_begin) {
          WgmmaWait<1>();  // the previous k-block's wgmmas retired: its slot is free
          release(prev_stage);
        }
        prev_stage = stage;
        if (++stage == stages) {
          stage = 0;
          phase ^= 1;
        }
      }
      WgmmaWait<0>();
      // A unit that stores its tile keeps its last slot for the epilogue (kEpiInSlot) until its
      // stores have read it; the producer refills it after that.
      // (Timing only: with kDebugSkipSplitExchange every piece stores its partial as the tile.)
      const bool skip_exchange = (params.debug_flags & kDebugSkipSplitExchange) != 0;
      const bool hold = kEpiInSlot && (skip_exchange || cur.groups >= 0);
      if (!hold) release(prev_stage);
      if (!decoded && have_next) next = decode(u + step);

      const int m_wg =
          (tc.m_cluster * cs + static_cast<int>(rank)) * BM + (kSplitN ? 0 : wgi * kWgRows);
      if (cur.groups != 0 && !skip_exchange) {
        // ---------------- split-K exchange (both consumer warpgroups) ----------------
        // Partial tiles are stored in accumulator-fragment order, float4-interleaved over the
        // 256 consumer threads: coalesced, and the owner's threads read their own fragments.
        const int ctid = tid - 128;
        constexpr int64_t kSlotVec = int64_t{BM} * BN / 4;  // float4s per slot
        auto slot_ptr = [&](int32_t group) {
          return reinterpret_cast<float4*>(params.partials) +
                 PartialSlot(group, static_cast<int>(rank), cs) * kSlotVec;
        };
        // Fragments of rows past M are neither written nor read (decode shapes: most rows).
        auto rows_live = [&](int h) { return m_wg + h * 64 + warp * 16 < pp.m; };
        if (cur.groups < 0) {
          const int32_t group = cur.group;
          float4* dst = slot_ptr(group);
#pragma unroll
          for (int h = 0; h < kHalves; ++h) {
            if (!rows_live(h)) continue;
#pragma unroll
            for (int i = 0; i < kWgCols / 2; i += 4) {
              __stcg(dst + ((h * (kWgCols / 2) + i) / 4) * 256 + ctid,
                     make_float4(acc[h][i], acc[h][i + 1], acc[h][i + 2], acc[h][i + 3]));
            }
          }
          NamedBarrierSync(1, 256);  // every consumer thread's partial is written
          if (ctid == 0) {
            __threadfence();
            StoreReleaseGpu(params.flags + PartialSlot(group, static_cast<int>(rank), cs),
                            params.epoch);
          }
          continue;  // the owner stores the tile
        }
        // Slot groups [first, end), walked by group: two live values beside the owner's loads.
        const int32_t first = cur.group, end = first + cur.groups;
        if (ctid == 0) {
          for (int32_t g = first; g < end; ++g) {
            const uint32_t* f = params.flags + PartialSlot(g, static_cast<int>(rank), cs);
            while (LoadAcquireGpu(f) != params.epoch) __nanosleep(128);
          }
        }
        NamedBarrierSync(1, 256);  // all partials of this tile are visible
        // NOTE: with at most 64 accumulators per thread (64-row tiles) two slots are loaded
        // before adding, so twice the loads are in flight: the owner's reads are latency-bound.
        constexpr int kVec = kWgCols / 8;  // float4s per m64 half and thread
        constexpr int kAtOnce = kHalves * kVec <= 16 ? 2 : 1;
        for (int32_t g = first; g < end; g += kAtOnce) {
#pragma unroll
          for (int h = 0; h < kHalves; ++h) {
            if (!rows_live(h)) continue;
            if constexpr (kAtOnce == 1) {
              const float4* src = slot_ptr(g) + h * kVec * 256 + ctid;
#pragma unroll
              for (int i = 0; i < kVec; ++i) {
                const float4 v = __ldcg(src + i * 256);
                acc[h][4 * i] += v.x;
                acc[h][4 * i + 1] += v.y;
                acc[h][4 * i + 2] += v.z;
                acc[h][4 * i + 3] += v.w;
              }
            } else {
              float4 v[kAtOnce][kVec];
#pragma unroll
              for (int j = 0; j < kAtOnce; ++j) {
                const bool have = g + j < end;
                const float4* src = slot_ptr(have ? g + j : g) + h * kVec * 256 + ctid;
#pragma unroll
                for (int i = 0; i < kVec; ++i) {
                  v[j][i] = have ? __ldcg(src + i * 256) : make_float4(0.f, 0.f, 0.f, 0.f);
                }
              }
#pragma unroll
              for (int j = 0; j < kAtOnce; ++j) {
#pragma unroll
                for (int i = 0; i < kVec; ++i) {
                  acc[h][4 * i] += v[j][i].x;
                  acc[h][4 * i + 1] += v[j][i].y;
                  acc[h][4 * i + 2] += v[j][i].z;
                  acc[h][4 * i + 3] += v[j][i].w;
                }
              }
            }
          }
        }
      }

      // ---------------- epilogue ----------------
      const uint32_t stg = hold ? slot_staging(prev_stage) : stg0;
      if (hold) NamedBarrierSync(3, 256);  // both warpgroups' wgmmas have read the slot
      // NOTE: two copies; alpha == 1 without C (the usual call) skips the scaling and the C
      // branches (measured with ncu on 2048^3: 517 instructions per consumer warp, 128 of
      // them FMULs by alpha, while the tensor cores wait).
      auto epilogue = [&](auto plain_tag) {
        constexpr bool kPlain = decltype(plain_tag)::value;
#pragma unroll
        for (int hh = 0; hh < kHalves; ++hh) {
          const int m_base = m_wg + hh * 64;  // this m64 half's first row
          const int m_warp = m_base + warp * 16;
          if (m_warp < pp.m && !(params.debug_flags & kDebugSkipEpilogue)) {
            const int n_base = tc.n_block * BN + (kSplitN ? wgi * kWgCols : 0);
            constexpr int kCW = kF32Out ? 32 : 64;  // columns per 128-byte staging row
            [[maybe_unused]] constexpr int kChunks = kWgCols / kCW;
            const bool use_c = pp.beta != 0.0f;
            const float alpha = pp.alpha, beta = pp.beta;
            const int row_lo = warp * 16 + lane / 4;  // and row_lo + 8
            // C value at tile-local (r, col) and (r, col+1), zero outside the problem.
            auto load_c2 = [&](int r, int col, float& c0, float& c1) {
              c0 = c1 = 0.0f;
              const int64_t gr = m_base + r, gc = n_base + col;
              if (gr >= pp.m || gc >= pp.n) return;
              if constexpr (kSwap) {  // C [M,N]: the tile's (r, col) is C's (col, r)
                const int64_t off = static_cast<int64_t>(tc.batch) * pp.stride_c + gc * pp.ldc + gr;
                auto at = [&](int64_t o) {
                  if constexpr (kF32Out) return static_cast<const float*>(pp.c)[o];
                  return __bfloat162float(static_cast<const __nv_bfloat16*>(pp.c)[o]);
                };
                c0 = at(off);
                if (gc + 1 < pp.n) c1 = at(off + pp.ldc);
                return;
              }
              const int64_t off = static_cast<int64_t>(tc.batch) * pp.stride_c + gr * pp.ldc + gc;
              if constexpr (kF32Out) {
                const float* cp = static_cast<const float*>(pp.c) + off;
                if (gc + 1 < pp.n) {
                  const float2 v = *reinterpret_cast<const float2*>(cp);
                  c0 = v.x, c1 = v.y;
                } else {
                  c0 = cp[0];
                }
              } else {
                const __nv_bfloat16* cp = static_cast<const __nv_bfloat16*>(pp.c) + off;
                if (gc + 1 < pp.n) {
                  const __nv_bfloat162 v = *reinterpret_cast<const __nv_bfloat162*>(cp);
                  c0 = __bfloat162float(v.x), c1 = __bfloat162float(v.y);
                } else {
                  c0 = __bfloat162float(cp[0]);
                }
              }
            };
            if constexpr (kSwap) {
              SwapEpilogueStore<kWgCols, kF32Out, kPlain>(acc[hh], stg, lane, &params.tma[kTmaD],
                                                          m_warp, n_base, pp.n, tc.batch, alpha,
                                                          beta, use_c, row_lo, load_c2);
            } else {
              // NOTE: chunks go in pairs, one per staging buffer, under one proxy fence and one
              // bulk group: the clock64 trace measured ~250 cycles per chunk for fence + store
              // issue, four times per warp and unit.
#pragma unroll
              for (int j0 = 0; j0 < kChunks; j0 += 2) {
                if (n_base + j0 * kCW >= pp.n) continue;
                if (lane == 0) BulkWaitGroupRead<0>();  // both buffers' last stores have read them
                __syncwarp();
#pragma unroll
                for (int jj = 0; jj < 2; ++jj) {
                  const int j = j0 + jj;
                  if (j >= kChunks || n_base + j * kCW >= pp.n) continue;
                  const uint32_t buf = stg + jj * kEpiBufBytes;
                  if constexpr (!kF32Out) {
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                      const int g = j * 8 + q * 2;  // two 8-column groups per stmatrix.x4
                      float v[8];
                      EpilogueValues<kPlain>(acc[hh], g, lane, row_lo, alpha, beta, use_c, load_c2,
                                             v);
                      uint32_t r[4];
#pragma unroll
                      for (int e = 0; e < 4; ++e) {
                        __nv_bfloat162 h = __floats2bfloat162_rn(v[2 * e], v[2 * e + 1]);
                        r[e] = *reinterpret_cast<uint32_t*>(&h);
                      }
                      const int row = ((lane / 8) % 2) * 8 + lane % 8;
                      const int unit = q * 2 + lane / 16;
                      StMatrixX4(buf + row * 128 + ((unit ^ (row % 8)) * 16), r[0], r[1], r[2],
                                 r[3]);
                    }
                  } else {
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                      const int g = j * 4 + q;
#pragma unroll
                      for (int h = 0; h < 2; ++h) {
                        const int row = lane / 4 + h * 8;  // within the warp's 16 rows
                        const int col_in = q * 8 + (lane % 4) * 2;
                        float v0 = acc[hh][g * 4 + h * 2], v1 = acc[hh][g * 4 + h * 2 + 1];
                        if constexpr (!kPlain) {
                          v0 *= alpha;
                          v1 *= alpha;
                        }
                        if (!kPlain && use_c) {
                          float c0, c1;
                          load_c2(row_lo + h * 8, j * kCW + col_in, c0, c1);
                          v0 += beta * c0;
                          v1 += beta * c1;
                        }
                        const uint32_t addr =
                            buf + row * 128 + (((col_in / 4) ^ (row % 8)) * 16) + (col_in % 4) * 4;
                        asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(v0),
                                     "f"(v1)
                                     : "memory");
                      }
                    }
                  }
                }
                FenceProxyAsyncShared();
                __syncwarp();
                if (lane == 0) {
#pragma unroll
                  for (int jj = 0; jj < 2; ++jj) {
                    const int j = j0 + jj;
                    if (j >= kChunks || n_base + j * kCW >= pp.n) continue;
                    TmaStore3d(&params.tma[3 * prob(tc.problem) + kTmaD], stg + jj * kEpiBufBytes,
                               n_base + j * kCW, m_warp, tc.batch);
                  }
                  BulkCommitGroup();
                }
              }
            }
          }
        }
      };
      if (pp.alpha == 1.0f && pp.beta == 0.0f) {
        epilogue(std::true_type{});
      } else {
        epilogue(std::false_type{});
      }
      if (hold) {
        if (lane == 0) BulkWaitGroupRead<0>();  // this warp's stores have read the slot
        __syncwarp();
        NamedBarrierSync(4 + wgi, 128);  // and every warp's of this warpgroup
        release(prev_stage);
      }
    }
    if (lane == 0) BulkWaitGroup<0>();
  }
  if (cs > 1) {
    // Peers may still arrive on this CTA's barriers: leave together.
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
  }
#endif
}

}  // namespace gemm::kernel::sm90
