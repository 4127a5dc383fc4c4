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

// Grouped ("GROUP_M") order inside one m_clusters x n_blocks grid: walks `group_m` cluster rows
// column by column, so consecutive tiles share B panels (and a band of A) in L2.
GEMM_HD void GroupedOrder(int64_t r, int32_t m_clusters, int32_t n_blocks, int32_t group_m,
                          int32_t* m_cluster, int32_t* n_block) {
  const int64_t group_size = static_cast<int64_t>(group_m) * n_blocks;
  const int64_t group = r / group_size;
  const int64_t first_m = group * group_m;
  const int64_t rows = (m_clusters - first_m) < group_m ? (m_clusters - first_m) : group_m;
  const int64_t in_group = r - group * group_size;
  *m_cluster = static_cast<int32_t>(first_m + in_group % rows);
  *n_block = static_cast<int32_t>(in_group / rows);
}

// Decodes cluster tile `t`. `problems[i]` needs fields tile_begin (first cluster tile of problem
// i; increasing), m_clusters, n_blocks (per batch entry). `t` must be below the total.
template <class Problems>
GEMM_HD TileCoord DecodeTile(int64_t t, const Problems& problems, int32_t num_problems,
                             int32_t group_m) {
  TileCoord c;
  int32_t p = 0;
  while (p + 1 < num_problems && t >= problems[p + 1].tile_begin) ++p;
  const int64_t local = t - problems[p].tile_begin;
  const int64_t per_batch = static_cast<int64_t>(problems[p].m_clusters) * problems[p].n_blocks;
  c.problem = p;
  c.batch = static_cast<int32_t>(local / per_batch);
  GroupedOrder(local - c.batch * per_batch, problems[p].m_clusters, problems[p].n_blocks, group_m,
               &c.m_cluster, &c.n_block);
  return c;
}

}  // namespace gemm::kernel
