// Persistent tile scheduler shared by host and device: maps a linear cluster-tile index to
// (problem, batch entry, M cluster, N block) in an L2-friendly grouped order. Plain C++ under a
// host compiler, so it is unit-tested on the CPU.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GEMM_HD __host__ __device__ __forceinline__
#else
#define GEMM_HD inline
#endif

namespace gemm::kernel {

// Where one cluster tile lies.
struct TileCoord {
  int32_t problem = 0;    // index into the launch's problem list
  int32_t batch = 0;      // batch entry within the problem
  int32_t m_cluster = 0;  // M position in units of (cluster_m * block_m) rows
  int32_t n_block = 0;    // N position in units of block_n columns
};

GEMM_HD int64_t CeilDiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Tile indices the device decodes must stay below this (32-bit arithmetic; the host checks).
inline constexpr int64_t kMaxTiles = int64_t{1} << 31;

// Division by a divisor fixed for a launch, as a multiply and a shift precomputed on the host:
// exact for 0 <= n < 2^31 and 1 <= d < 2^31 (mul = ceil(2^shift / d), shift = 31 + ceil(log2 d)).
// NOTE: the device decodes every work unit's tile with a few of these; 64-bit divisions there
// took ~1,200 cycles per unit (measured with a clock64 trace), during which the consumers' tensor
// cores idled.
struct FastDiv {
  uint32_t mul = 0x80000000u;  // d = 1
  uint32_t shift = 31;

  // The constants for divisor `d` (1 <= d < 2^31).
  GEMM_HD static FastDiv For(uint32_t d) {
    uint32_t log2 = 0;
    while ((uint64_t{1} << log2) < d) ++log2;
    FastDiv f;
    f.shift = 31 + log2;
    f.mul = static_cast<uint32_t>(((uint64_t{1} << f.shift) + d - 1) / d);
    return f;
  }
  // n / d for 0 <= n < 2^31.
  GEMM_HD uint32_t Div(uint32_t n) const {
    return static_cast<uint32_t>((static_cast<uint64_t>(n) * mul) >> shift);
  }
};

// The divisors of one problem's tile walk (GroupedOrder, DecodeTile).
struct TileDivisors {
  FastDiv per_batch;  // m_clusters * n_blocks: tiles per batch entry
  FastDiv group;      // group_m * n_blocks: tiles per group of cluster rows
  FastDiv rows;       // group_m: cluster rows of a full group
  FastDiv last_rows;  // cluster rows of the last group (m_clusters % group_m, or group_m)
};

// Divisors for an m_clusters x n_blocks grid walked in groups of `group_m` cluster rows.
GEMM_HD TileDivisors MakeTileDivisors(int32_t m_clusters, int32_t n_blocks, int32_t group_m) {
  TileDivisors d;
  d.per_batch = FastDiv::For(static_cast<uint32_t>(m_clusters) * n_blocks);
  d.group = FastDiv::For(static_cast<uint32_t>(group_m) * n_blocks);
  d.rows = FastDiv::For(static_cast<uint32_t>(group_m));
  const int32_t last = m_clusters % group_m;
  d.last_rows = FastDiv::For(static_cast<uint32_t>(last == 0 ? group_m : last));
  return d;
}

// Grouped ("GROUP_M") order inside one m_clusters x n_blocks grid: walks `group_m` cluster rows
// column by column, so consecutive tiles share B panels (and a band of A) in L2. `dv` comes from
// MakeTileDivisors(m_clusters, n_blocks, group_m); r < m_clusters * n_blocks.
GEMM_HD void GroupedOrder(uint32_t r, int32_t m_clusters, int32_t n_blocks, int32_t group_m,
                          const TileDivisors& dv, int32_t* m_cluster, int32_t* n_block) {
  const uint32_t group = dv.group.Div(r);
  const uint32_t first_m = group * static_cast<uint32_t>(group_m);
  const uint32_t in_group = r - group * static_cast<uint32_t>(group_m) * n_blocks;
  const bool full = static_cast<uint32_t>(m_clusters) - first_m >= static_cast<uint32_t>(group_m);
  const uint32_t rows = full ? group_m : m_clusters - first_m;
  const uint32_t col = (full ? dv.rows : dv.last_rows).Div(in_group);
  *m_cluster = static_cast<int32_t>(first_m + in_group - col * rows);
  *n_block = static_cast<int32_t>(col);
}

// Decodes cluster tile `t`. `problems[i]` needs fields tile_begin (first cluster tile of problem
// i; increasing), m_clusters, n_blocks (per batch entry) and div (their MakeTileDivisors with
// `group_m`). `t` must be below the total, which must be below kMaxTiles.
template <class Problems>
GEMM_HD TileCoord DecodeTile(int64_t t, const Problems& problems, int32_t num_problems,
                             int32_t group_m) {
  TileCoord c;
  int32_t p = 0;
  while (p + 1 < num_problems && t >= problems[p + 1].tile_begin) ++p;
  const uint32_t local = static_cast<uint32_t>(t - problems[p].tile_begin);
  const uint32_t batch = problems[p].div.per_batch.Div(local);
  const uint32_t per_batch = static_cast<uint32_t>(problems[p].m_clusters) * problems[p].n_blocks;
  c.problem = p;
  c.batch = static_cast<int32_t>(batch);
  GroupedOrder(local - batch * per_batch, problems[p].m_clusters, problems[p].n_blocks, group_m,
               problems[p].div, &c.m_cluster, &c.n_block);
  return c;
}

}  // namespace gemm::kernel
