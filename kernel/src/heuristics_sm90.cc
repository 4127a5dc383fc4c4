// SM90 launch-configuration heuristics: estimate the time of each candidate as
// (waves of cluster tiles over the SMs) x (cost of one tile) and keep the cheapest.
#include "heuristics_sm90.h"

#include <algorithm>

namespace gemm::kernel::sm90 {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Relative cost of one CTA tile, in units of a 128x128 tile's MMA work, from timings on H200
// (tests/gpu/kernel_sm90_perf_test.cc, Sm90Perf.Variants): 128x256 tiles ran at ~700-740
// TFLOPS and 128x128 ones at ~500-550, so the narrow tile is charged 1.3 half-tiles. The 2-CTA
// multicast cluster measured equal or up to 1% faster (it halves B's L2 reads): 1% credit.
double TileCost(const TileConfig& cfg) {
  double cost = cfg.block_n == 256 ? 2.0 : 1.3;
  if (cfg.cluster_m == 2) cost *= 0.99;
  return cost;
}

}  // namespace

int SharedMemoryBytes(const TileConfig& cfg, bool fp32_out) {
  (void)fp32_out;  // the epilogue stages 128-byte rows either way
  const int stage = (cfg.block_m + cfg.block_n) * cfg.block_k * 2;
  const int epilogue = 8 /*consumer warps*/ * 2 /*buffers*/ * 16 /*rows*/ * 128 /*bytes*/;
  const int barriers = 2 * cfg.stages * 8;
  return cfg.stages * stage + epilogue + barriers + 1024 /*alignment slack*/;
}

int MaxStages(int block_n, bool fp32_out, int smem_limit) {
  TileConfig cfg;
  cfg.block_n = block_n;
  int best = 2;
  for (int s = 2; s <= 8; ++s) {
    cfg.stages = s;
    if (SharedMemoryBytes(cfg, fp32_out) <= smem_limit) best = s;
  }
  return best;
}

int64_t NumTiles(const ShapeQuery& q, const TileConfig& cfg) {
  return CeilDiv(q.m, cfg.block_m) * CeilDiv(q.n, cfg.block_n) * std::max<int64_t>(q.batch, 1);
}

TileConfig ChooseConfig(const ShapeQuery& q, int sm_count, int smem_limit) {
  sm_count = std::max(sm_count, 2);
  TileConfig best;
  double best_time = -1.0;
  for (int block_n : {256, 128}) {
    for (int cluster : {2, 1}) {
      TileConfig cfg;
      cfg.block_n = block_n;
      cfg.cluster_m = cluster;
      cfg.group_m = 16 / cluster;  // 16 M tiles per L2 group (best of 4..32 measured)
      cfg.stages = MaxStages(block_n, q.fp32_out, smem_limit);
      const int64_t m_tiles = CeilDiv(q.m, cfg.block_m);
      if (cluster == 2 && m_tiles < 2 && q.tiles_hint == 0) continue;  // half the cluster idle
      int64_t cluster_tiles =
          CeilDiv(m_tiles, cluster) * CeilDiv(q.n, block_n) * std::max<int64_t>(q.batch, 1);
      if (q.tiles_hint > 0) {  // a group: approximate from its 128x128 tile count
        cluster_tiles = CeilDiv(q.tiles_hint * 128, int64_t{block_n} * cluster);
      }
      const int64_t slots = sm_count / cluster;
      const double waves = static_cast<double>(CeilDiv(cluster_tiles, slots));
      const double time = waves * TileCost(cfg);
      if (best_time < 0 || time < best_time - 1e-9) {
        best_time = time;
        best = cfg;
      }
    }
  }
  return best;
}

}  // namespace gemm::kernel::sm90
