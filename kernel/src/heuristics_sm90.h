// Tile-shape, pipeline-depth and cluster choice of the SM90 kernel from the problem shape and
// the device's SM count and shared memory. Pure host code (no CUDA), unit-tested on the CPU.
#pragma once

#include <cstdint>
#include <span>

namespace gemm::kernel::sm90 {

// One launch configuration of the SM90 kernel.
struct TileConfig {
  int block_m = 128;     // rows per CTA tile (two consumer warpgroups of block_m / 2 rows; with 64,
                         // each warpgroup takes half the columns)
  int block_n = 256;     // columns per CTA tile: 128x256, 256x128, 128x128, 64x256 or 64x128
  int block_k = 64;      // K per pipeline stage (one 128-byte swizzle atom of BF16)
  int stages = 4;        // depth of the TMA -> WGMMA shared-memory pipeline
  int cluster_m = 2;     // CTAs per cluster along M sharing (multicasting) the B tile: 1 or 2
  int group_m = 16;      // L2 grouping: clusters along M visited before moving along N
  int tail_splits = 0;   // K pieces per tile of the last, partial wave (sm90_split.h): 0 lets
                         // PlanTailSplit derive them from the idle SMs; 1 never splits;
                         // kStreamKSplits (-1) shares that wave out as stream-K
  bool swap_ab = false;  // B [N,K] runs as the kernel's A: block_m rows of N (128) by block_n
                         // rows of M (one of kSwapWidths); clusters pair tiles along N
};

// Shape facts the choice depends on.
struct ShapeQuery {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;       // equal-shape batch entries (or the problems of a group)
  int64_t tiles_hint = 0;  // for groups: the sum over problems of 128x128 tiles; 0 otherwise
  bool fp32_out = false;
  bool b_kn = false;             // B stored [K,N] (else [N,K])
  bool allow_tall_tiles = true;  // consider 256x128 tiles
};

// Bytes of shared memory one CTA of `cfg` needs (pipeline stages, epilogue staging, barriers).
int SharedMemoryBytes(const TileConfig& cfg, bool fp32_out);

// Deepest pipeline of a block_m x block_n tile that fits `smem_limit` bytes (at least 2).
int MaxStages(int block_m, int block_n, bool fp32_out, int smem_limit);

// Number of CTA tiles a problem of `q` splits into under `cfg`.
int64_t NumTiles(const ShapeQuery& q, const TileConfig& cfg);

// Up to this many rows (one M tile, bound by reading B) a single problem always gets 64-row
// tiles (64x128 or 64x256) without a cluster.
inline constexpr int64_t kWideDecodeMaxRows = 64;

// Whether a single-problem launch of `cfg` over `m` rows stops its A loads at M (a tensor map
// whose box ends there, for the last, partial box of A rows) instead of loading whole boxes that
// TMA zero-fills past M: always without multicast, and in 2-CTA clusters while the partial box
// is less than half filled (there the longer k-blocks of the 128x256 tiles hide the rest).
bool ClipALoads(int64_t m, const TileConfig& cfg);

// A measured choice for a band of single-problem shapes (batch 1, not a group, M above the
// decode rows), applied before the wave-count model: the first rule of ShapeRules() that
// matches decides. A rule matches when m_min <= M <= m_max, the B layout fits, K has at least
// min_k_blocks blocks of 64 and the rule's own cluster tiles fill between min_waves and
// max_waves of the device's cluster slots (sm_count / cluster_m; a bound <= 0 is open).
struct ShapeRule {
  enum class Layout { kAny, kNK, kKN };
  int64_t m_min = 0, m_max = 0;
  Layout layout = Layout::kAny;
  double min_waves = 0, max_waves = 0;
  int64_t min_k_blocks = 0;
  // What the rule picks: a compiled tile, a 1- or 2-CTA cluster, the tail split factor
  // (TileConfig::tail_splits) and the pipeline depth (0: the deepest that fits).
  int block_m = 128, block_n = 256, cluster_m = 1, tail_splits = 0, stages = 0;
};

// The swap-AB tiles' measured bands (single problems, batch 1, K >= 4096): M is cut into equal
// tiles of the narrowest compiled width that holds them: M = 129-240 one tile, 257-480 two,
// 513-576 three (four when four fit one wave), 577-768 four while they fill at most four waves,
// 769-960 four; in 1-CTA clusters, 2-CTA for four tiles. Sets *cfg and returns true where a
// band applies.
bool SwapRule(const ShapeQuery& q, int sm_count, int smem_limit, TileConfig* cfg);

// Above SwapRule's bands (M > 960; single problems, batch 1, K >= 4096): where the wave-count
// model's plain launch `plain` has 128x128 tiles or fills less than one wave, the swap-AB width
// (160 and up over 128x128 tiles) in 2-CTA clusters whose whole waves the model puts at least
// 5% faster. Sets *cfg and returns true where it applies.
bool LargeMSwapRule(const ShapeQuery& q, const TileConfig& plain, int sm_count, int smem_limit,
                    TileConfig* cfg);

// The rules ChooseConfig applies, in order.
std::span<const ShapeRule> ShapeRules();

// The first of `rules` matching `q` on `sm_count` SMs, or null.
const ShapeRule* MatchShapeRule(std::span<const ShapeRule> rules, const ShapeQuery& q,
                                int sm_count);

// Multiply-adds one CTA's tile must hold (useful rows x columns x K) for stream-K to pay for its
// partial exchange: 176 x 128 x 8192, the smallest measured to gain (StreamKRule).
inline constexpr int64_t kStreamKMinTileMacs = int64_t{176} * 128 * 8192;

// Whether a single problem under `cfg` (as chosen) runs its last wave as stream-K
// (TileConfig::tail_splits = kStreamKSplits): whole waves of cluster tiles and then a tail of
// half to three quarters of another, where either one cluster tile along M covers M (one whole
// wave, at least kStreamKMinTileMacs per tile) or plain tiles cover it in several, with K >= 4096.
bool StreamKRule(const ShapeQuery& q, const TileConfig& cfg, int sm_count);

// Picks the configuration for `q` on a device with `sm_count` SMs and `smem_limit` bytes of
// opt-in shared memory per block: SwapRule's where it applies, else ChoosePlainConfig's unless
// LargeMSwapRule swaps it; then stream-K where StreamKRule says.
TileConfig ChooseConfig(const ShapeQuery& q, int sm_count, int smem_limit);

// The choice among the tiles that are not swapped: the decode tiles (M <= kWideDecodeMaxRows),
// the first matching ShapeRule, else the wave-count model.
TileConfig ChoosePlainConfig(const ShapeQuery& q, int sm_count, int smem_limit);

// Devices whose DRAM peaks at this many GB/s or more get 128-byte L2 promotion on the operand
// tensor maps, the others 256 bytes.
inline constexpr int64_t kL2Promotion128MinGBps = 4000;

// Bytes the L2 fetches per tensor-map request (the maps' L2 promotion, 128 or 256) on a device
// whose DRAM peaks at `peak_dram_gbps` (0: unknown). Measured in one process per set, both ways:
// on an H200 (4.8 TB/s) 128 B is faster on every memory-bound set (expert groups over B [K,N]
// +8%, decode +0.5-2.6%, batched +1%); on an H100 (3.35 TB/s) 256 B is (expert groups +2.7%,
// decode +1.2%, batched +0.6%). The compute-bound large set is the same either way.
int L2PromotionBytes(int64_t peak_dram_gbps);

// One member of a grouped launch, as the choice sees it.
struct GroupMember {
  int64_t m = 0, n = 0, k = 0;
};

// Picks the configuration of one grouped launch over `members` (sorted by decreasing K, then N:
// the first member's K and N stand for the group) on a device as above.
TileConfig ChooseGroupConfig(std::span<const GroupMember> members, bool fp32_out, bool b_kn,
                             int sm_count, int smem_limit);

}  // namespace gemm::kernel::sm90
