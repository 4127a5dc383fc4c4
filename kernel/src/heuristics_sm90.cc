// SM90 launch-configuration heuristics: the swap-AB tiles in their measured bands (SwapRule), the
// decode tiles for one row of 64-row tiles, then the measured rules for bands of single-problem
// shapes (kShapeRules), else estimate the time of each candidate as (waves of cluster tiles over
// the SMs) x (cost of one tile) and keep the cheapest, swapped above the bands where that launch
// is weak (LargeMSwapRule); then stream-K for the last wave where it measured faster
// (StreamKRule).
#include "heuristics_sm90.h"

#include <algorithm>

#include "sm90/sm90_split.h"
#include "sm90/sm90_tiles.h"

namespace gemm::kernel::sm90 {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Relative cost of one CTA tile, in units of a 128x128 tile's MMA work, from timings on H200
// (tests/gpu/kernel_sm90_perf_test.cc, Sm90Perf.Variants): 128x256 tiles ran at ~700-740
// TFLOPS and 128x128 ones at ~500-550, so the narrow tile is charged 1.3 half-tiles. The 2-CTA
// multicast cluster measured equal or up to 1% faster (it halves B's L2 reads): 1% credit,
// except in a single wave of tiles with K <= kShortK: there the pair mostly waits for each other
// and is 1% dearer (H200, gemm_bench --cluster 1 vs 2, speed vs cuBLAS in the two B layouts:
// 2048^3 0.929 vs 0.906 and 0.951 vs 0.928, 512x8192x8192 0.986 vs 0.973 and 0.988 vs 0.981;
// but with a long K the multicast wins: 512x8192x28672 0.970 vs 0.987 and 0.962 vs 0.994).
constexpr int64_t kShortK = 8192;
// kTallTileCost: 256x128 relative to 128x256 (same MMA work and shared-memory footprint).
// Measured within noise of 128x256 on H200 (Sm90Perf.Variants, 4 shapes); ties go to 128x256.
constexpr double kTallTileCost = 1.0;

constexpr double kClusterCredit = 0.99;

double TileCost(const TileConfig& cfg, double waves, int64_t k) {
  double cost = cfg.block_m * cfg.block_n == 128 * 128 ? 1.3 : 2.0;
  if (cfg.block_m == 256) cost *= kTallTileCost;
  if (cfg.cluster_m == 2) cost *= waves <= 1 && k <= kShortK ? 1.01 : kClusterCredit;
  return cost;
}

// Cluster tiles of the plain tile `cfg` over `q` (a group: approximated from its 128x128 count).
int64_t PlainClusterTiles(const ShapeQuery& q, const TileConfig& cfg) {
  if (q.tiles_hint > 0) {
    return CeilDiv(q.tiles_hint * 128 * 128, int64_t{cfg.block_m} * cfg.block_n * cfg.cluster_m);
  }
  return CeilDiv(CeilDiv(q.m, cfg.block_m), cfg.cluster_m) * CeilDiv(q.n, cfg.block_n) *
         std::max<int64_t>(q.batch, 1);
}

// The wave-count model's time of the plain tile `cfg`: whole waves of its cluster tiles over
// the SMs x the tile's cost.
double PlainWaveTime(const ShapeQuery& q, const TileConfig& cfg, int sm_count) {
  const double waves =
      static_cast<double>(CeilDiv(PlainClusterTiles(q, cfg), sm_count / cfg.cluster_m));
  return waves * TileCost(cfg, waves, q.k);
}

// The swap-AB tile 128 x `width` in clusters of `cluster`, with the deepest pipeline that fits.
TileConfig SwapTiles(int width, int cluster, bool fp32_out, int smem_limit) {
  TileConfig c;
  c.swap_ab = true;
  c.block_m = 128;
  c.block_n = width;
  c.cluster_m = cluster;
  c.group_m = std::max(1, 2048 / (c.block_m * cluster));
  c.stages = MaxStages(c.block_m, c.block_n, fp32_out, smem_limit);
  return c;
}

// The 64-row decode tiles (64x128 while `narrow_tiles` of 64x128 fit one wave, else 64x256) of a
// launch whose shortest K is `k`: no cluster, the pipeline depth as measured.
TileConfig DecodeTiles(int64_t narrow_tiles, int64_t k, bool b_kn, bool fp32_out, int sm_count,
                       int smem_limit) {
  TileConfig best;
  best.block_m = 64;
  best.block_n = narrow_tiles <= sm_count ? 128 : 256;
  best.cluster_m = 1;
  best.group_m = 2048 / best.block_m;
  best.stages = MaxStages(best.block_m, best.block_n, fp32_out, smem_limit);
  // NOTE: the 64x128 tiles stream B faster through a shallower pipeline than the 8 stages that
  // fit: 6 for B [N,K]; for B [K,N] 5 when the tail split halves each tile's K (at most half
  // a wave of tiles), where 8 stages were slowest. Measured on H200 (gemm_bench --stages 3-8,
  // three rounds, 8 shapes with M = 24-64, N = 4096-16384, K = 4096-28672): [N,K] best or
  // within 0.2 us at 6 on every shape, e.g. 24x8192x28672 126.7 -> 118.7 us; [K,N] split
  // shapes best at 5, e.g. 48x8192x8192 43.4 -> 39.4 us, 24x8192x28672 128.3 -> 120.4, but
  // the unsplit 32x16384x8192 best at 8 (71.0 vs 73.2 at 5). 64x256 tiles stay at 4. Groups of
  // experts agree (two experts of 1x4096x14336, split in two: kn 66.7 us at 8 stages, 65.0 at
  // 5; nk 64.2 at both 6 and 8).
  if (best.block_n == 128) {
    // The tail split halves K (PlanTailSplit): at most half a wave, at least 2 x 8 K blocks.
    const bool split = 2 * narrow_tiles <= sm_count && CeilDiv(k, 64) >= 2 * kMinSplitKBlocks;
    const int shallow = b_kn ? (split ? 5 : best.stages) : 6;
    best.stages = std::min(best.stages, shallow);
  }
  return best;
}

// NOTE: the rules, each with its measurement. Rules for the coalesced-batch band (M of about
// 100-1024) go here; bench/best_variants.py over scripts/gpu_m_sweep_variants.sh names the
// variant (tile, cluster, split) that wins each row of the m_sweep set, and its --rules mode
// scores the bands below (its RULES table mirrors them).
constexpr ShapeRule kShapeRules[] = {
    // Two 128-row tiles (128 < M <= 256: e.g. a coalesced batch of 9-16 decode requests) with at
    // most half a wave of 128x256 cluster tiles: 128x256 tiles in 2-CTA clusters, whose tail
    // split hands every SM half the K of a wide tile. The wave-count model picks 128x128
    // clusters there, each running the whole K. Measured on H200 (gemm_bench, N = K = 8192, both
    // layouts): 72-77 us vs 57-60 us at M = 144-256; M <= 128 keeps 128x128 (44-45 us vs 47-50).
    {.m_min = 129,
     .m_max = 256,
     .max_waves = 0.5,
     .min_k_blocks = 2 * kMinSplitKBlocks,
     .block_m = 128,
     .block_n = 256,
     .cluster_m = 2},
    // The bands below come from forcing each launch variant over the m_sweep set (M = 272-768,
    // (N, K) = (4096, 14336), (8192, 8192), (8192, 28672), (14336, 4096), (28672, 8192), both
    // layouts; H200, scripts/gpu_m_sweep_variants.sh, bench/best_variants.py --rules). Each
    // bounds its waves and K to the range it was measured on; speeds are against the
    // wave-count model's choice on the same rows.
    //
    // Three 128-row tiles (256 < M <= 384): 128x256 tiles without a cluster, the last partial
    // wave split along K as planned. The model picks 128x128 tiles for N = 4096 and 14336 and
    // 2-CTA clusters for N = 8192 with K = 28672, padding the third row of tiles to a pair. 80
    // rows: 1.086x geomean, worst row 0.996x (where the model already picks this launch);
    // e.g. M = 320, 4096x14336: 0.45-0.46 -> 0.69-0.71 of cuBLAS's speed.
    {.m_min = 257,
     .m_max = 384,
     .min_waves = 0.3,
     .max_waves = 3.0,
     .min_k_blocks = 64,
     .block_m = 128,
     .block_n = 256,
     .cluster_m = 1},
    // Four 128-row tiles (384 < M <= 512) whose 128x256 cluster tiles fill about half a wave
    // (N = 4096): as in the two-row band above, 2-CTA clusters of 128x256 tiles split along K
    // instead of one wave of 128x128 clusters each running the whole K. 16 rows (N = 4096,
    // K = 14336): 1.056x geomean, worst row 1.032x. Wider N (1 to 5 waves) gained 0-2%.
    {.m_min = 385,
     .m_max = 512,
     .min_waves = 0.4,
     .max_waves = 0.5,
     .min_k_blocks = 64,
     .block_m = 128,
     .block_n = 256,
     .cluster_m = 2},
    // Five 128-row tiles (512 < M <= 640): 128x256 tiles without a cluster, the last wave split
    // as planned; the model's 2-CTA clusters of 128x128 (N = 8192) or 128x256 tiles pad the
    // fifth row of tiles to a pair. 10 rows (M = 640): 1.219x geomean, worst row 0.989x
    // (28672x8192, where the model already picks this launch); e.g. 8192x8192 0.62 -> 0.91
    // of cuBLAS's speed, 8192x28672 0.60-0.63 -> 0.95-0.97.
    {.m_min = 513,
     .m_max = 640,
     .min_waves = 0.5,
     .max_waves = 4.5,
     .min_k_blocks = 64,
     .block_m = 128,
     .block_n = 256,
     .cluster_m = 1},
    // Six 128-row tiles (640 < M <= 768): 2-CTA clusters of 128x256 tiles, the last wave split
    // as planned, not the model's 128x128 clusters (N = 8192; the wider and narrower N already
    // get this launch). 10 rows (M = 768): 1.038x geomean, worst row 0.996x; N = 8192
    // 0.91 -> 0.97-1.01 of cuBLAS's speed.
    {.m_min = 641,
     .m_max = 768,
     .min_waves = 0.5,
     .max_waves = 5.5,
     .min_k_blocks = 64,
     .block_m = 128,
     .block_n = 256,
     .cluster_m = 2},
};

bool LayoutFits(ShapeRule::Layout layout, bool b_kn) {
  return layout == ShapeRule::Layout::kAny || (layout == ShapeRule::Layout::kKN) == b_kn;
}

}  // namespace

std::span<const ShapeRule> ShapeRules() { return kShapeRules; }

const ShapeRule* MatchShapeRule(std::span<const ShapeRule> rules, const ShapeQuery& q,
                                int sm_count) {
  if (q.tiles_hint != 0 || q.batch > 1 || q.m <= kWideDecodeMaxRows) return nullptr;
  for (const ShapeRule& r : rules) {
    if (q.m < r.m_min || q.m > r.m_max || !LayoutFits(r.layout, q.b_kn) ||
        CeilDiv(q.k, 64) < r.min_k_blocks) {
      continue;
    }
    const int64_t cluster_tiles =
        CeilDiv(CeilDiv(q.m, r.block_m), r.cluster_m) * CeilDiv(q.n, r.block_n);
    const double waves = static_cast<double>(cluster_tiles) /
                         static_cast<double>(std::max(sm_count, 2) / r.cluster_m);
    if ((r.min_waves > 0 && waves < r.min_waves) || (r.max_waves > 0 && waves > r.max_waves)) {
      continue;
    }
    return &r;
  }
  return nullptr;
}

int SharedMemoryBytes(const TileConfig& cfg, bool fp32_out) {
  (void)fp32_out;  // the epilogue stages 128-byte rows either way
  return Sm90SmemBytes(cfg.block_m, cfg.block_n, cfg.stages);
}

int MaxStages(int block_m, int block_n, bool fp32_out, int smem_limit) {
  TileConfig cfg;
  cfg.block_m = block_m;
  cfg.block_n = block_n;
  int best = 2;
  for (int s = 2; s <= 8; ++s) {
    cfg.stages = s;
    if (SharedMemoryBytes(cfg, fp32_out) <= smem_limit) best = s;
  }
  return best;
}

// NOTE: measured on H200 (gemm_bench, N = K = 8192, both layouts, three rounds): clipped loads
// 72 rows 51.2 -> 41.0 us, 96 rows 44.8 -> 41.4, 17 rows 41.9 -> 39.0; in 2-CTA clusters
// 144 rows 59.8 -> 52.4, 160 rows 55.3 -> 53.2, but 200 rows 52.8 -> 53.3 and 53.5 -> 55.0
// (72 of 128 rows filled) and 320 rows 84.1 -> 84.7 (64 of 128).
bool ClipALoads(int64_t m, const TileConfig& cfg) {
  const int64_t box = std::min(cfg.block_m, 128);
  const int64_t rem = m % box;
  if (rem == 0) return false;
  return cfg.cluster_m == 1 || 2 * rem < box;
}

int64_t NumTiles(const ShapeQuery& q, const TileConfig& cfg) {
  return CeilDiv(q.m, cfg.block_m) * CeilDiv(q.n, cfg.block_n) * std::max<int64_t>(q.batch, 1);
}

// NOTE: measured on H200 (scripts/gpu_m_sweep_variants.sh SWAP=1: every width in 1- and 2-CTA
// clusters over the m_sweep rows, M = 80-1024, five weight shapes, B [N,K] first): the fastest
// width per row is the narrowest that holds M in the fewest tiles of at most 240 rows, in
// 1-CTA clusters (2-CTA within 0-4%), e.g. M = 272 (N = K = 8192) 84.1 us with the plain
// 128x256 tiles (three rows, split) -> 56.6 us as two 144-row tiles (cuBLAS 52.2); M = 160,
// 4096x14336: 53.9 -> 43.9 us (cuBLAS 42.7). B [K,N] agrees: over its rows with M = 129-1024
// these bands take the plain tiles' geomean against cuBLAS from 0.870 to 1.000 (every row's
// best width: 1.001; worst row 0.865, 14336x4096 M = 272), B [N,K]'s from 0.861 to 0.983. Where
// plain tiles stay: M <= 128 (swap within -2% to +5% of them), 241-256 and 481-512 (whole 128-row
// tiles; the 240-row width pads to a third tile, plain faster on 3-4 of 5 shapes), 961-1024 (plain
// 0.986 against 0.93-0.95) and 577-768 where four M tiles fill more than four waves (N = 28672:
// within 1% either way, plain measured first).
// Above 512 rows, a dense grid (M = 400-1024 in steps of 16, the same five shapes, both layouts;
// H200) chose the number of tiles: three at 513-576 (176-192 rows; four 144-row tiles only when
// they fit one wave, N <= 4224), four in 2-CTA clusters at 577-960. Over that grid these bands
// take the geomean against cuBLAS from 0.969 (bands to 768 only) to 0.996 (every row's best
// width: 1.005): 513-576 0.918 -> 0.971, 769-960 0.934 -> 1.005 (e.g. 8192x8192 M = 784: plain
// 169 us, cuBLAS 138).
bool SwapRule(const ShapeQuery& q, int sm_count, int smem_limit, TileConfig* cfg) {
  if (q.batch > 1 || q.tiles_hint != 0 || CeilDiv(q.k, 64) < 64) return false;
  const int64_t n_tiles = CeilDiv(q.n, 128);
  int m_tiles = 0, cluster = 1;
  if (q.m > 128 && q.m <= 240) {
    m_tiles = 1;
  } else if (q.m > 256 && q.m <= 480) {
    m_tiles = 2;
  } else if (q.m > 512 && q.m <= 576) {
    const bool four_fit_one_wave = n_tiles * 4 <= sm_count;
    m_tiles = four_fit_one_wave ? 4 : 3, cluster = four_fit_one_wave ? 2 : 1;
  } else if (q.m > 576 && q.m <= 960 && (q.m > 768 || n_tiles <= sm_count)) {
    m_tiles = 4, cluster = 2;  // up to 768 rows: while four tiles fill at most four waves
  } else {
    return false;
  }
  const int64_t width = CeilDiv(CeilDiv(q.m, m_tiles), 16) * 16;
  *cfg = SwapTiles(static_cast<int>(std::max<int64_t>(width, kSwapWidths[0])), cluster, q.fp32_out,
                   smem_limit);
  return true;
}

// NOTE: measured on H200 (gemm_bench, both layouts, twice each in one call): above SwapRule's
// bands the wave-count model's plain launch is weakest where it picks 128x128 tiles (128x256
// ones quantize worse) or fills less than one wave (the tail split leaves a wave that is more
// than half full alone), and there swap-AB tiles in 2-CTA clusters won on every sampled shape:
// 1536x4096x14336 (m_sweep) 259 -> 231 us (0.88 -> 0.99 of cuBLAS), 1376x4096x14336
// 1.41-1.45x, 1104x2048x8192 1.43-1.50x, 1552x2048x14336 1.16x, 1984x3072x4096 1.09-1.10x,
// 1024x5120x8192 1.05x. Where the plain launch is 128x256 tiles over several waves, their tail
// split already evens the last wave and the swap tiles lost on 13 of 16 shapes (e.g.
// 2272x4096x8192 0.90-0.94x, 4336x2048x14336 0.87-0.90x); 144-row swap tiles against 128x128
// ones gained 4-8% (2192x2048x4096) or lost 1% (1456x3072x14336), so that case starts at 160.
// A swap tile is charged kLargeSwapTileCost per multiply-add against the 128x256 tile, which
// predicted the measured gains of the 192-row tiles within 2%; the rule wants a modeled gain of
// kLargeSwapMinGain. Checked on 45 other shapes it takes (drawn at random from M = 992-5952,
// N = 1024-5120, K = 4096-14336), against the plain launch in the same call: every row of both
// layouts faster, 1.19x geomean, the least 1.02x (4512x1024x8192).
constexpr int64_t kLargeSwapMinRows = 961;    // above SwapRule's bands
constexpr int64_t kLargeSwapMinKBlocks = 64;  // K >= 4096
constexpr double kLargeSwapTileCost = 1.15;
constexpr double kLargeSwapMinGain = 1.05;
constexpr int kLargeSwapMinWidthOverNarrow = 160;

bool LargeMSwapRule(const ShapeQuery& q, const TileConfig& plain, int sm_count, int smem_limit,
                    TileConfig* cfg) {
  if (q.m < kLargeSwapMinRows || q.batch > 1 || q.tiles_hint != 0 ||
      CeilDiv(q.k, 64) < kLargeSwapMinKBlocks || plain.swap_ab) {
    return false;
  }
  const bool narrow = plain.block_m * plain.block_n == 128 * 128;
  const bool idle = PlainClusterTiles(q, plain) < sm_count / plain.cluster_m;
  if (!narrow && !idle) return false;
  // 2-CTA clusters pair the 128-row tiles of N; the time is whole waves x the width's cost.
  const int64_t pairs = CeilDiv(CeilDiv(q.n, 128), 2);
  double best_time = -1.0;
  int best_width = 0;
  for (int width : kSwapWidths) {
    if (narrow && width < kLargeSwapMinWidthOverNarrow) continue;
    const double waves = static_cast<double>(CeilDiv(CeilDiv(q.m, width) * pairs, sm_count / 2));
    const double time = waves * 2.0 * width / 256 * kLargeSwapTileCost * kClusterCredit;
    if (best_time < 0 || time < best_time - 1e-9) {
      best_time = time;
      best_width = width;
    }
  }
  if (PlainWaveTime(q, plain, sm_count) < kLargeSwapMinGain * best_time) return false;
  *cfg = SwapTiles(best_width, 2, q.fp32_out, smem_limit);
  return true;
}

// NOTE: measured on H200 (gemm_bench --set m_sweep --layout both, twice at the dispatch and
// twice with --split stream, one call; then the chosen rows against the kernel before stream-K,
// twice in another): stream-K recovers the idle part of a last wave only where
// a tile's work dwarfs the exchange of its FP32 partial (about 6 us per 128x256 tile through L2,
// measured with no loads and no epilogue: 57.7 -> 63.3 us at 368 x 14336 x 4096) and where the
// weight panel one tile reads is read by no other tile at another time (one tile along M: with
// two, the two tiles of a panel are split at different K offsets and the panel is read twice;
// e.g. 14336 x 4096 at M = 272-480, 1.70 waves: 0.91-0.98 of the dispatch). Over 28672 x 8192
// (224 one-tile columns on 132 SMs, 1.70 waves) it took M = 176-240 (swap-AB, one tile) 1.5-4.9%
// faster and M = 256 (128x256 in 2-CTA clusters) 5.5-6.2%, both layouts; M = 144 and 160, whose
// tiles hold less work, ran 0-1.7% slower. Below half a wave of idle SMs the tail split
// (PlanTailSplit) keeps the tail: stream-K was slower than it on every such row.
// With several cluster tiles along M, plain tiles over whole waves and then such a tail gain too
// (the tail is a small part of the work): against the same launch without it (--no_split; the
// tail split leaves a tail of half a wave or more alone), both layouts, twice each in one call,
// on 37 shapes drawn at random from M = 1024-8192, N = 2048-28672, K = 4096-14336 plus the
// m_sweep and large rows it takes: 1.031x geomean, 70 of 74 rows faster, the least 0.982x
// (1088x10240x4096); e.g. 8192^3 +1.3-2.5%, 512x14336x4096 +3.0-3.8%, 1600x6144x14336 +7-9%.
// With K = 2048 it measured -2.1% to +0.9% (10 shapes), so it starts at 4096. Swap-AB tiles
// with two tiles along M stay out (see above).
constexpr int64_t kStreamKMinKBlocksAlongM = 64;
bool StreamKRule(const ShapeQuery& q, const TileConfig& cfg, int sm_count) {
  if (q.batch > 1 || q.tiles_hint != 0 || cfg.tail_splits != 0) return false;
  // Rows of M and columns of N one CTA's tile covers, and the CTAs of a cluster along M.
  const int64_t cta_rows = cfg.swap_ab ? cfg.block_n : cfg.block_m;
  const int64_t cta_cols = cfg.swap_ab ? cfg.block_m : cfg.block_n;
  const int64_t along_m = cfg.swap_ab ? 1 : cfg.cluster_m;
  const int64_t slots = sm_count / cfg.cluster_m;
  // Whole waves of `tiles` cluster tiles, then a tail of half to three quarters of one.
  auto tail_fits = [&](int64_t tiles) {
    const int64_t tail = tiles % slots;
    return tiles > slots && 2 * tail >= slots && 4 * tail <= 3 * slots;
  };
  if (q.m > cta_rows * along_m) {  // several cluster tiles along M: plain tiles, K >= 4096
    return !cfg.swap_ab && CeilDiv(q.k, 64) >= kStreamKMinKBlocksAlongM &&
           tail_fits(PlainClusterTiles(q, cfg));
  }
  const int64_t tiles = CeilDiv(q.n, cta_cols * (cfg.swap_ab ? cfg.cluster_m : 1));
  if (tiles >= 2 * slots || !tail_fits(tiles)) return false;  // one whole wave, then the tail
  return CeilDiv(q.m, along_m) * cta_cols * q.k >= kStreamKMinTileMacs;  // one CTA's useful work
}

TileConfig ChooseConfig(const ShapeQuery& q, int sm_count, int smem_limit) {
  sm_count = std::max(sm_count, 2);
  TileConfig cfg;
  if (!SwapRule(q, sm_count, smem_limit, &cfg)) {
    const TileConfig plain = ChoosePlainConfig(q, sm_count, smem_limit);
    if (!LargeMSwapRule(q, plain, sm_count, smem_limit, &cfg)) cfg = plain;
  }
  if (StreamKRule(q, cfg, sm_count)) cfg.tail_splits = kStreamKSplits;
  return cfg;
}

// The choice among the non-swapped tiles: the decode tiles, the measured rules, else the
// wave-count model.
TileConfig ChoosePlainConfig(const ShapeQuery& q, int sm_count, int smem_limit) {
  sm_count = std::max(sm_count, 2);
  TileConfig best;
  if (q.tiles_hint == 0 && q.m <= kWideDecodeMaxRows) {
    // Decode-like: one M tile, the time is reading B; the launcher's tail split-K spreads the
    // tiles over the SMs along K. 64 rows, not 128: with 128 the second consumer warpgroup
    // multiplied zero rows, and the tensor cores (M=64 8192^2 with no loads at all: 35.7 us)
    // were as slow as reading B (~31 us). 128 columns while those tiles still fit one wave
    // (fewer K pieces, so less partial exchange), else 256. Measured on H200 (gemm_bench
    // --sm90_main --tile, M in {24, 32, 48, 64}, both layouts, two runs): N=8192 64x128 faster
    // by 0-9% (8192^2 kn M=64: 0.0404 vs 0.0443 ms), N=28672 64x256 faster by 2-10%.
    return DecodeTiles(CeilDiv(q.n, 128) * std::max<int64_t>(q.batch, 1), q.k, q.b_kn, q.fp32_out,
                       sm_count, smem_limit);
  }
  if (const ShapeRule* rule = MatchShapeRule(kShapeRules, q, sm_count)) {
    best.block_m = rule->block_m;
    best.block_n = rule->block_n;
    best.cluster_m = rule->cluster_m;
    best.group_m = std::max(1, 2048 / (best.block_m * best.cluster_m));
    best.stages = rule->stages > 0 ? rule->stages
                                   : MaxStages(best.block_m, best.block_n, q.fp32_out, smem_limit);
    best.tail_splits = rule->tail_splits;
    return best;
  }
  double best_time = -1.0;
  // Candidates in order of preference on ties: 128x256, 256x128, 128x128.
  constexpr int kTiles[3][2] = {{128, 256}, {256, 128}, {128, 128}};
  for (const auto& tile : kTiles) {
    const int block_m = tile[0], block_n = tile[1];
    if (block_m == 256 && !q.allow_tall_tiles) continue;
    for (int cluster : {2, 1}) {
      TileConfig cfg;
      cfg.block_m = block_m;
      cfg.block_n = block_n;
      cfg.cluster_m = cluster;
      // 2048 rows (16 tiles of 128) per L2 group: the best of 4..32 measured.
      cfg.group_m = std::max(1, 2048 / (block_m * cluster));
      cfg.stages = MaxStages(block_m, block_n, q.fp32_out, smem_limit);
      if (cluster == 2 && CeilDiv(q.m, cfg.block_m) < 2 && q.tiles_hint == 0) {
        continue;  // half the cluster idle
      }
      const double time = PlainWaveTime(q, cfg, sm_count);
      if (best_time < 0 || time < best_time - 1e-9) {
        best_time = time;
        best = cfg;
      }
    }
  }
  // NOTE: one row of 128x128 tiles over B [K,N] (decode batches of 65-128 rows) streams B faster
  // with 5 stages than the 6 that fit, once A's loads stop at M (ClipALoads). H200, three rounds,
  // 9 shapes with M = 72-128: faster at 5 on 8, e.g. 96x8192x8192 42.5 -> 40.8 us and
  // 128x8192x28672 128.2 -> 124.1; 128x6144x8192 34.3 -> 34.6. H100 (before the A change): faster
  // at 5 at every M. B [N,K] stays at 6 (mixed: within -0.9 to +0.9 us).
  if (q.tiles_hint == 0 && q.m <= 128 && q.b_kn && best.block_m == 128 && best.block_n == 128) {
    best.stages = std::min(best.stages, 5);
  }
  return best;
}

TileConfig ChooseGroupConfig(std::span<const GroupMember> members, bool fp32_out, bool b_kn,
                             int sm_count, int smem_limit) {
  if (members.empty()) return TileConfig{};
  sm_count = std::max(sm_count, 2);
  int64_t tiles = 0, narrow_tiles = 0, max_m = 0, min_k = members[0].k;
  double flops = 0, small_m_flops = 0;
  for (const GroupMember& p : members) {
    tiles += CeilDiv(p.m, 128) * CeilDiv(p.n, 128);
    narrow_tiles += CeilDiv(p.n, 128);
    max_m = std::max(max_m, p.m);
    min_k = std::min(min_k, p.k);
    const double f = static_cast<double>(p.m) * p.n * p.k;
    flops += f;
    if (p.m <= 128) small_m_flops += f;
  }
  // NOTE: every member within one 64-row tile (mixture-of-experts decode: a few tokens per
  // expert): the 64-row decode tiles, as for a single decode problem (the launch plans its tail
  // split with the shortest K). Each member is one row of tiles either way, and 128-row tiles
  // multiplied at least half zero rows: H200, gemm_bench --set moe, 0.973-0.978 -> 1.025 against
  // cublasGemmGroupedBatchedEx.
  if (max_m <= kWideDecodeMaxRows) {
    return DecodeTiles(narrow_tiles, min_k, b_kn, fp32_out, sm_count, smem_limit);
  }
  ShapeQuery q;
  q.m = 256, q.n = members[0].n, q.k = members[0].k, q.batch = 1, q.tiles_hint = tiles;
  q.fp32_out = fp32_out;
  q.allow_tall_tiles = false;  // groups hold small-M members; 128-row tiles waste less
  TileConfig cfg = ChooseConfig(q, sm_count, smem_limit);
  // A 2-CTA cluster idles half of itself on problems with M <= 128: only worth it when those
  // carry little of the work.
  if (small_m_flops > 0.25 * flops) {
    cfg.cluster_m = 1;
    cfg.group_m = 2048 / cfg.block_m;
  }
  return cfg;
}

int L2PromotionBytes(int64_t peak_dram_gbps) {
  return peak_dram_gbps >= kL2Promotion128MinGBps ? 128 : 256;
}

}  // namespace gemm::kernel::sm90
