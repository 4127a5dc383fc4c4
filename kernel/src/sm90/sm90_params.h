// Kernel parameters of the SM90 persistent GEMM, shared by the host launcher and the device
// code. Everything travels by value as one __grid_constant__ parameter (TMA descriptors
// included), so a call needs no workspace and no host-to-device copy.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "scheduler.h"  // TileDivisors
#include "sm90/sm90_tiles.h"

namespace gemm::kernel::sm90 {

// Problems per launch of the grouped kernel (~28 KB of kernel parameters, under the 32 KB
// limit); longer groups are split into several launches.
inline constexpr int kMaxGroupPerLaunch = 64;

// Tensor maps of one problem, in KernelParams::tma[3 * problem + kTma*].
inline constexpr int kTmaA = 0;  // BF16 A as {K, M, batch}, box {64, 128, 1}, 128B swizzle
inline constexpr int kTmaB = 1;  // BF16 B as {K, N, batch} (kNK) or {N, K, batch} (kKN)
inline constexpr int kTmaD = 2;  // D as {N, M, batch}, box {128 bytes, 16, 1}, 128B swizzle;
                                 // swap-AB: box {16, 16, 1} of D's own (N, M), no swizzle

// One problem (all batch entries of a strided batch, or one member of a group).
struct ProblemParams {
  const void* c;       // C (d dtype) or null; read only when beta != 0
  int64_t ldc;         // elements
  int64_t stride_c;    // elements between batch entries of C
  int64_t tile_begin;  // first cluster tile of this problem in the launch's linear order
  int32_t m, n, k;
  int32_t m_clusters;  // ceil(M / (cluster_m * 128))
  int32_t n_blocks;    // ceil(N / block_n)
  float alpha, beta;
  // Grouped launches: 1 when M is below one A box, so that this member's A map has a box of M
  // rows and its loads stop at M (as a_clip does for single problems); 0 otherwise.
  int32_t a_short;
  TileDivisors div;  // of m_clusters x n_blocks with the launch's group_m (scheduler.h)
};

// The whole launch.
template <int P>
struct KernelParams {
  CUtensorMap tma[3 * P];
  // Single-problem launches with a_clip set: A with a box of M % (A box rows) rows, for the last,
  // partial A box of the M edge. TMA's zero-fill of out-of-bounds rows is slow: 72x8192x8192 on
  // 128x128 tiles ran 51.2 us against 41.0 with this map (H200).
  CUtensorMap tma_a_tail;
  ProblemParams problems[P];
  int64_t total_tiles;   // cluster tiles over all problems and batch entries
  int32_t num_problems;  // <= P
  int32_t group_m;       // L2 grouping (scheduler.h)
  int32_t stages;        // pipeline depth (shared memory is sized by the host to match)
  int32_t cluster_m;     // 1 or 2 CTAs per cluster along M (B multicast)
  int32_t debug_flags;   // kDebug* bits; 0 in production (timing experiments only)
  int32_t a_clip;        // 1: A loads stop at M (tma_a_tail; ClipALoads), else whole boxes
  // Tail split-K or stream-K (sm90_split.h's SplitPlan); dp_tiles == total_tiles, splits == 1
  // and sk_clusters == 0 when off.
  int64_t dp_tiles;
  int64_t tail_tiles;
  int32_t splits;
  int32_t sk_clusters;
  int32_t sk_units;
  int32_t sk_k_blocks;
  uint32_t epoch;   // value the flags of this launch are set to (never 0)
  uint32_t* flags;  // one per partial slot, in the caller's workspace
  float* partials;  // block_m * block_n floats per slot, after the flags
};

static_assert(sizeof(KernelParams<kMaxGroupPerLaunch>) <= 32764, "over the kernel parameter limit");

// Timing-experiment switches (results are wrong with 1, 2, 4 or 64 set).
inline constexpr int kDebugSkipEpilogue = 1;  // consumers store nothing
inline constexpr int kDebugNoLoads = 2;       // producer signals slots without loading them
inline constexpr int kDebugNoMulticast = 4;   // clusters load all of B per CTA (no multicast)
inline constexpr int kDebugNoSplit = 8;       // never split the tail wave along K (results right)
inline constexpr int kDebugSkipSplitExchange = 64;  // split-K pieces each store their own partial
inline constexpr int kDebugExitEarly = 128;  // CTAs exit after the prologue (launch cost only)

}  // namespace gemm::kernel::sm90
