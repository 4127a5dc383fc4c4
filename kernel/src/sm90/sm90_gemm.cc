// Host side of the SM90 kernel: checks what it supports, picks the configuration
// (heuristics_sm90.h), encodes the TMA descriptors into the kernel parameters and launches the
// matching compiled instantiation.
#include "sm90/sm90_gemm.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster_launch.h"
#include "common/status_macros.h"
#include "cuda_status.h"
#include "heuristics_sm90.h"
#include "sm90/sm90_launch.h"
#include "sm90/sm90_params.h"
#include "sm90/sm90_split.h"
#include "sm90/sm90_variant.h"
#include "validate.h"

namespace gemm::kernel::sm90 {
namespace {

constexpr int64_t kMaxTmaStride = int64_t{1} << 40;

absl::StatusOr<PFN_cuTensorMapEncodeTiled_v12000> EncodeFn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  static cudaError_t err = cudaSuccess;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                           &q);
    if (err == cudaSuccess && q == cudaDriverEntryPointSuccess) {
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
    }
  });
  if (fn == nullptr) {
    GEMM_RETURN_IF_ERROR(CudaStatus(err, "cudaGetDriverEntryPointByVersion"));
    return absl::InternalError("cuTensorMapEncodeTiled not found in the driver");
  }
  return fn;
}

// 3D tiled tensor map {d0 (contiguous), d1, d2} with row pitch `pitch1` and batch pitch
// `pitch2` in bytes, box {box0, box1, 1}, 128-byte swizzle (or `swizzle`), out-of-bounds
// elements read as 0.
// L2 promotion of the operand maps: the device's (L2PromotionBytes); the tuning hook can change it
// (debug_flags bits 16 / 32 / 512: none / 256 B / 128 B).
thread_local CUtensorMapL2promotion t_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
// Group members load whole A boxes, zero-filled past M (debug_flags bit 256: A/B timing of
// ProblemParams::a_short).
thread_local bool t_whole_a_boxes = false;

absl::Status Encode3d(CUtensorMap* map, CUtensorMapDataType type, const void* ptr, uint64_t d0,
                      uint64_t d1, uint64_t d2, uint64_t pitch1, uint64_t pitch2, uint32_t box0,
                      uint32_t box1, CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B) {
  GEMM_ASSIGN_OR_RETURN(const PFN_cuTensorMapEncodeTiled_v12000 encode, EncodeFn());
  const cuuint64_t dims[3] = {d0, d1, d2};
  const cuuint64_t strides[2] = {pitch1, pitch2};
  const cuuint32_t box[3] = {box0, box1, 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  return CuStatus(encode(map, type, 3, const_cast<void*>(ptr), dims, strides, box, elem_strides,
                         CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, t_promotion,
                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                  "cuTensorMapEncodeTiled");
}

std::mutex g_override_mu;
TuningOverride g_override;  // all zero: no override
std::atomic<bool> g_have_override{false};
thread_local std::string t_last_launch;

struct DeviceLimits {
  int sm_count = 0;
  int smem_optin = 0;
  int l2_promotion_bytes = 256;  // L2PromotionBytes of the device's DRAM peak
};

// The configuration `cfg` after the tuning override; sets the tensor maps' L2 promotion (the
// device's, or the override's) for this thread's next encodes.
TileConfig ApplyOverride(TileConfig cfg, const DeviceLimits& limits, int* debug_flags) {
  *debug_flags = 0;
  const CUtensorMapL2promotion device_promotion = limits.l2_promotion_bytes == 128
                                                      ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                                      : CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  t_promotion = device_promotion;
  t_whole_a_boxes = false;
  if (!g_have_override.load(std::memory_order_relaxed)) return cfg;
  std::lock_guard<std::mutex> lock(g_override_mu);
  if (g_override.block_m > 0) cfg.block_m = g_override.block_m;
  if (g_override.block_n > 0) cfg.block_n = g_override.block_n;
  // A forced tile without forced stages gets the deepest pipeline that fits (set by the caller).
  if (g_override.block_m > 0 || g_override.block_n > 0) {
    cfg.stages = 0;
    cfg.swap_ab = g_override.swap_ab > 0;  // a forced tile is a plain one unless swap is forced
  }
  if (g_override.stages > 0) cfg.stages = g_override.stages;
  if (g_override.cluster_m > 0) cfg.cluster_m = g_override.cluster_m;
  if (g_override.group_m > 0) cfg.group_m = g_override.group_m;
  if (g_override.tail_splits != 0) cfg.tail_splits = g_override.tail_splits;
  if (g_override.swap_ab != 0) cfg.swap_ab = g_override.swap_ab > 0;
  *debug_flags = g_override.debug_flags;
  t_promotion = (*debug_flags & 16)    ? CU_TENSOR_MAP_L2_PROMOTION_NONE
                : (*debug_flags & 32)  ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                : (*debug_flags & 512) ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                       : device_promotion;
  t_whole_a_boxes = (*debug_flags & 256) != 0;
  // 16/32/256/512 were host-side (above); the kernel sees the others.
  *debug_flags &= 0xf | kDebugSkipSplitExchange | kDebugExitEarly;
  return cfg;
}

// The tuning override's swap_ab (0 without an override).
int OverrideSwap() {
  if (!g_have_override.load(std::memory_order_relaxed)) return 0;
  std::lock_guard<std::mutex> lock(g_override_mu);
  return g_override.swap_ab;
}

absl::StatusOr<DeviceLimits> Limits() {
  static std::array<std::atomic<uint64_t>, 64> cache{};
  int device = 0;
  GEMM_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  if (device < 64) {
    const uint64_t v = cache[device].load(std::memory_order_relaxed);
    if (v != 0) {
      return DeviceLimits{static_cast<int>(v >> 33), static_cast<int>(v & 0xffffffff),
                          (v >> 32) & 1 ? 128 : 256};
    }
  }
  DeviceLimits l;
  GEMM_RETURN_IF_ERROR(
      CudaStatus(cudaDeviceGetAttribute(&l.sm_count, cudaDevAttrMultiProcessorCount, device),
                 "cudaDeviceGetAttribute(MultiProcessorCount)"));
  GEMM_RETURN_IF_ERROR(CudaStatus(
      cudaDeviceGetAttribute(&l.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
      "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)"));
  // DRAM peak: two transfers per memory clock over the bus (0 where an attribute is missing).
  int mem_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess) {
    (void)cudaGetLastError();
    mem_khz = bus_bits = 0;
  }
  l.l2_promotion_bytes =
      L2PromotionBytes(static_cast<int64_t>(2.0 * mem_khz * 1e3 * bus_bits / 8 / 1e9));
  if (device < 64) {
    cache[device].store((uint64_t(l.sm_count) << 33) |
                            (uint64_t(l.l2_promotion_bytes == 128) << 32) | uint32_t(l.smem_optin),
                        std::memory_order_relaxed);
  }
  return l;
}

// Batch pitch in bytes for a tensor map: the stride when batched, else any valid value.
uint64_t BatchPitch(int64_t batch, int64_t stride, int64_t rows, int64_t ld, std::size_t elem) {
  if (batch > 1) return static_cast<uint64_t>(stride) * elem;
  return static_cast<uint64_t>(std::max<int64_t>(rows, 1) * ld) * elem;
}

bool StrideOk(int64_t batch, int64_t stride, std::size_t elem) {
  if (batch <= 1) return true;
  const int64_t bytes = stride * static_cast<int64_t>(elem);
  return bytes > 0 && bytes % 16 == 0 && bytes < kMaxTmaStride;
}

// `p` as the swap-AB kernel sees it: B is its A (rows N; [N,K] K-major or [K,N] MN-major, which
// the caller tells apart by p.b_layout), A [M,K] its B (rows M, K-major); C and D keep their own
// layout (the kernel reads and writes them transposed).
Problem SwappedView(const Problem& p) {
  Problem s = p;
  s.m = p.n, s.n = p.m;
  s.a = p.b, s.lda = p.ldb;
  s.b = p.a, s.ldb = p.lda;
  s.b_layout = BLayout::kNK;
  return s;
}

// Whether the kernel's A is MN-major in memory: swap-AB tiles over B [K,N].
bool AMnMajor(const Problem& user, const TileConfig& cfg) {
  return cfg.swap_ab && user.b_layout == BLayout::kKN;
}

// The problem the kernel runs for `p` under `cfg`.
Problem KernelView(const Problem& p, const TileConfig& cfg) {
  return cfg.swap_ab ? SwappedView(p) : p;
}

// The D tensor map of `p` (the caller's problem): {N, M, batch} with a box of one consumer warp's
// 16 rows of 128 bytes and 128-byte swizzle, or for swap-AB tiles 16 x 16 without swizzle.
absl::Status EncodeD(const Problem& p, int64_t batch, int64_t sd, bool swap_ab, CUtensorMap* map) {
  const std::size_t dsz = DTypeSize(p.d_dtype);
  const CUtensorMapDataType type = p.d_dtype == DType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                             : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const uint64_t pitch2 = BatchPitch(batch, sd, p.m, p.ldd, dsz);
  if (swap_ab) {
    return Encode3d(map, type, p.d, p.n, p.m, batch, p.ldd * dsz, pitch2, 16, 16,
                    CU_TENSOR_MAP_SWIZZLE_NONE);
  }
  return Encode3d(map, type, p.d, p.n, p.m, batch, p.ldd * dsz, pitch2,
                  static_cast<uint32_t>(128 / dsz), 16);
}

// Fills `out` (all but tile_begin) for `batch` entries of `user` (the caller's problem; the
// kernel runs KernelView(user, cfg), with the strides of its A and B swapped to match). A group
// member (`in_group`) whose M is below one A box gets an A box of M rows
// (ProblemParams::a_short): TMA's zero-fill of the rows past M was slow.
absl::Status BuildProblem(const Problem& user, int64_t batch, int64_t sa, int64_t sb, int64_t sc,
                          int64_t sd, const TileConfig& cfg, bool in_group, CUtensorMap* tma,
                          ProblemParams* out) {
  const Problem p = KernelView(user, cfg);
  if (cfg.swap_ab) std::swap(sa, sb);
  const bool kn = p.b_layout == BLayout::kKN;
  const int64_t a_box = std::min(cfg.block_m, 128);
  const bool a_short = in_group && p.m < a_box && !t_whole_a_boxes;
  out->a_short = a_short ? 1 : 0;
  if (AMnMajor(user, cfg)) {  // B [K,N] as the kernel's A: 64-column boxes of 64 K rows
    GEMM_RETURN_IF_ERROR(Encode3d(&tma[kTmaA], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.a, p.m, p.k,
                                  batch, p.lda * 2, BatchPitch(batch, sa, p.k, p.lda, 2), 64, 64));
  } else {
    GEMM_RETURN_IF_ERROR(Encode3d(&tma[kTmaA], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.a, p.k, p.m,
                                  batch, p.lda * 2, BatchPitch(batch, sa, p.m, p.lda, 2), 64,
                                  static_cast<uint32_t>(a_short ? p.m : a_box)));  // rows per box
  }
  const int64_t b_rows = kn ? p.k : p.n;
  if (kn) {
    GEMM_RETURN_IF_ERROR(Encode3d(&tma[kTmaB], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.b, p.n, p.k,
                                  batch, p.ldb * 2, BatchPitch(batch, sb, b_rows, p.ldb, 2), 64,
                                  64));
  } else {
    GEMM_RETURN_IF_ERROR(Encode3d(&tma[kTmaB], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.b, p.k, p.n,
                                  batch, p.ldb * 2, BatchPitch(batch, sb, b_rows, p.ldb, 2), 64,
                                  cfg.block_n / cfg.cluster_m));
  }
  GEMM_RETURN_IF_ERROR(EncodeD(user, batch, sd, cfg.swap_ab, &tma[kTmaD]));
  const bool use_c = p.beta != 0.0f;
  out->c = use_c ? p.c : nullptr;
  out->ldc = use_c ? p.ldc : 0;
  out->stride_c = use_c ? sc : 0;
  out->m = static_cast<int32_t>(p.m);
  out->n = static_cast<int32_t>(p.n);
  out->k = static_cast<int32_t>(p.k);
  const int64_t cluster_rows = int64_t{cfg.block_m} * cfg.cluster_m;
  out->m_clusters = static_cast<int32_t>((p.m + cluster_rows - 1) / cluster_rows);
  out->n_blocks = static_cast<int32_t>((p.n + cfg.block_n - 1) / cfg.block_n);
  out->alpha = p.alpha;
  out->beta = use_c ? p.beta : 0.0f;
  return absl::OkStatus();
}

// The single-problem kernel's A tail map (KernelParams::tma_a_tail) and a_clip, where
// ClipALoads chooses them: A with a box of the rows the last, partial A box of the M edge holds.
absl::Status BuildATail(const Problem& p, int64_t batch, int64_t sa, const TileConfig& cfg,
                        KernelParams<1>* params) {
  params->a_clip = 0;
  if (!ClipALoads(p.m, cfg)) return absl::OkStatus();
  const int64_t rows = p.m % std::min(cfg.block_m, 128);
  GEMM_RETURN_IF_ERROR(Encode3d(&params->tma_a_tail, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.a, p.k,
                                p.m, batch, p.lda * 2, BatchPitch(batch, sa, p.m, p.lda, 2), 64,
                                static_cast<uint32_t>(rows)));
  params->a_clip = 1;
  return absl::OkStatus();
}

// Plans the swap-AB instantiation of `cfg` (block_n one of kSwapWidths) for the output dtype and
// B layout.
cudaError_t PlanSwapFor(KernelParams<1>& params, const TileConfig& cfg, bool f32, bool kn,
                        int sm_count, const SplitWorkspace& ws, LaunchShape* shape) {
  cudaError_t err = cudaErrorInvalidConfiguration;
#define GEMM_SM90_SWAP_ONE(BN, F32, KN)                                     \
  if (cfg.block_n == BN && f32 == F32 && kn == KN) {                        \
    err = PlanSm90<128, BN, F32, KN, 1, true>(params, sm_count, ws, shape); \
  }
#define GEMM_SM90_SWAP_CASE(BN)        \
  GEMM_SM90_SWAP_ONE(BN, false, false) \
  GEMM_SM90_SWAP_ONE(BN, true, false)  \
  GEMM_SM90_SWAP_ONE(BN, false, true)  \
  GEMM_SM90_SWAP_ONE(BN, true, true)
  GEMM_SM90_SWAP_CASE(144)
  GEMM_SM90_SWAP_CASE(160)
  GEMM_SM90_SWAP_CASE(176)
  GEMM_SM90_SWAP_CASE(192)
  GEMM_SM90_SWAP_CASE(208)
  GEMM_SM90_SWAP_CASE(224)
  GEMM_SM90_SWAP_CASE(240)
#undef GEMM_SM90_SWAP_CASE
#undef GEMM_SM90_SWAP_ONE
  return err;
}

// Plans the instantiation of `cfg` for the output dtype and B layout, and describes it for
// LastLaunchDescription().
template <int P>
cudaError_t PlanFor(KernelParams<P>& params, const TileConfig& cfg, DType d, BLayout layout,
                    int sm_count, const SplitWorkspace& ws, LaunchShape* shape) {
  const bool f32 = d == DType::kFP32, kn = layout == BLayout::kKN;
  cudaError_t err = cudaErrorInvalidConfiguration;
#define GEMM_SM90_CASE(BM, BN, F32, KN)                                                   \
  if (!cfg.swap_ab && cfg.block_m == BM && cfg.block_n == BN && f32 == F32 && kn == KN) { \
    err = PlanSm90<BM, BN, F32, KN, P>(params, sm_count, ws, shape);                      \
  }
  GEMM_SM90_CASE(128, 256, false, false)
  GEMM_SM90_CASE(128, 256, false, true)
  GEMM_SM90_CASE(128, 256, true, false)
  GEMM_SM90_CASE(128, 256, true, true)
  GEMM_SM90_CASE(256, 128, false, false)
  GEMM_SM90_CASE(256, 128, false, true)
  GEMM_SM90_CASE(256, 128, true, false)
  GEMM_SM90_CASE(256, 128, true, true)
  GEMM_SM90_CASE(128, 128, false, false)
  GEMM_SM90_CASE(128, 128, false, true)
  GEMM_SM90_CASE(128, 128, true, false)
  GEMM_SM90_CASE(128, 128, true, true)
  GEMM_SM90_CASE(64, 256, false, false)
  GEMM_SM90_CASE(64, 256, false, true)
  GEMM_SM90_CASE(64, 256, true, false)
  GEMM_SM90_CASE(64, 256, true, true)
  GEMM_SM90_CASE(64, 128, false, false)
  GEMM_SM90_CASE(64, 128, false, true)
  GEMM_SM90_CASE(64, 128, true, false)
  GEMM_SM90_CASE(64, 128, true, true)
#undef GEMM_SM90_CASE
  if constexpr (P == 1) {
    if (cfg.swap_ab) err = PlanSwapFor(params, cfg, f32, kn, sm_count, ws, shape);
  }
  t_last_launch = absl::StrCat(cfg.swap_ab ? "swap_ab " : "", "tile=", cfg.block_m, "x",
                               cfg.block_n, " stages=", cfg.stages, " cluster_m=", cfg.cluster_m,
                               " group_m=", cfg.group_m, " grid=", shape->grid,
                               shape->splits > 1 ? absl::StrCat(" split_k=", shape->splits) : "",
                               shape->stream_k ? " stream_k" : "");
  return err;
}

// Sets tile_begin of every problem, total_tiles (`batch` entries per problem) and the launch
// fields; no split (the launcher may add one).
template <int P>
void FinishParams(const TileConfig& cfg, int num_problems, int64_t batch, KernelParams<P>* params) {
  int64_t begin = 0;
  for (int i = 0; i < num_problems; ++i) {
    ProblemParams& pp = params->problems[i];
    pp.tile_begin = begin;
    pp.div = MakeTileDivisors(pp.m_clusters, pp.n_blocks, cfg.group_m);
    begin += int64_t{pp.m_clusters} * pp.n_blocks * batch;
  }
  params->total_tiles = begin;
  params->dp_tiles = begin;
  params->tail_tiles = 0;
  params->splits = 1;
  params->sk_clusters = 0;
  params->sk_units = 0;
  params->sk_k_blocks = 0;
  params->a_clip = 0;
  params->num_problems = num_problems;
  params->group_m = cfg.group_m;
  params->stages = cfg.stages;
  params->cluster_m = cfg.cluster_m;
}

// Shared-memory sanity of an overridden configuration.
bool ConfigFits(const TileConfig& cfg, bool f32, int smem_optin) {
  const bool tile =
      cfg.swap_ab ? IsSm90SwapTile(cfg.block_m, cfg.block_n) : IsSm90Tile(cfg.block_m, cfg.block_n);
  return tile && (cfg.cluster_m == 1 || cfg.cluster_m == 2) && cfg.stages >= 2 &&
         SharedMemoryBytes(cfg, f32) <= smem_optin;
}

}  // namespace

bool Supports(const StridedBatch& args) {
  const Problem& p = args.problem;
  const std::size_t dsz = DTypeSize(p.d_dtype);
  return TmaCompatible(args) && StrideOk(args.batch, args.stride_a, 2) &&
         StrideOk(args.batch, args.stride_b, 2) && StrideOk(args.batch, args.stride_d, dsz) &&
         (p.beta == 0.0f || StrideOk(args.batch, args.stride_c, dsz)) &&
         p.lda * 2 < kMaxTmaStride && p.ldb * 2 < kMaxTmaStride &&
         p.ldd * static_cast<int64_t>(dsz) < kMaxTmaStride;
}

bool Supports(std::span<const Problem> group) {
  for (const Problem& p : group) {
    StridedBatch one;
    one.problem = p;
    if (!Supports(one)) return false;
  }
  return true;
}

void SetTuningOverride(const TuningOverride& o) {
  std::lock_guard<std::mutex> lock(g_override_mu);
  g_override = o;
  g_have_override.store(true, std::memory_order_relaxed);
}

void ClearTuningOverride() {
  std::lock_guard<std::mutex> lock(g_override_mu);
  g_override = TuningOverride{};
  g_have_override.store(false, std::memory_order_relaxed);
}

std::string LastLaunchDescription() { return t_last_launch; }

uint32_t NextSplitEpoch() {
  static std::atomic<uint32_t> epoch{0};
  uint32_t e = epoch.fetch_add(1, std::memory_order_relaxed) + 1;
  while (e == 0) e = epoch.fetch_add(1, std::memory_order_relaxed) + 1;
  return e;
}

cudaError_t EnqueueSm90(const LaunchShape& shape, const void* params, cudaStream_t stream) {
  const ClusterLaunch launch(shape.grid, shape.threads, shape.cluster,
                             static_cast<size_t>(shape.smem), stream);
  void* args[] = {const_cast<void*>(params)};
  return cudaLaunchKernelExC(&launch.cfg, shape.kernel, args);
}

namespace {

// The configuration Gemm() runs `args` with (heuristics, then the tuning override).
absl::StatusOr<TileConfig> ConfigFor(const StridedBatch& args, const DeviceLimits& limits,
                                     int* debug_flags) {
  const Problem& p = args.problem;
  ShapeQuery q;
  q.m = p.m, q.n = p.n, q.k = p.k, q.batch = args.batch, q.fp32_out = p.d_dtype == DType::kFP32;
  q.b_kn = p.b_layout == BLayout::kKN;
  const TileConfig chosen = OverrideSwap() < 0
                                ? ChoosePlainConfig(q, limits.sm_count, limits.smem_optin)
                                : ChooseConfig(q, limits.sm_count, limits.smem_optin);
  TileConfig cfg = ApplyOverride(chosen, limits, debug_flags);
  if (cfg.stages <= 0) {
    cfg.stages = MaxStages(cfg.block_m, cfg.block_n, q.fp32_out, limits.smem_optin);
  }
  if (!ConfigFits(cfg, q.fp32_out, limits.smem_optin)) {
    return absl::InvalidArgumentError("sm90: tuning override does not fit");
  }
  return cfg;
}

// NOTE: members run in order of decreasing K (then N): the persistent CTAs take tiles round by
// round, and rounds of equal-cost tiles keep the CTAs that share a B panel in step, so the panel
// is read from HBM once. In list order, CTAs drifted apart and re-read B (measured on H200: a
// 64-problem group with K in {8192, 28672} ran at 0.59x a cuBLASLt loop).
std::vector<Problem> LaunchOrder(std::span<const Problem> group) {
  std::vector<Problem> sorted(group.begin(), group.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const Problem& x, const Problem& y) {
    return x.k != y.k ? x.k > y.k : x.n > y.n;
  });
  return sorted;
}

// The configuration of one grouped launch over `chunk` (heuristics, then the tuning override).
absl::StatusOr<TileConfig> GroupConfigFor(std::span<const Problem> chunk,
                                          const DeviceLimits& limits, int* debug_flags) {
  std::array<GroupMember, kMaxGroupPerLaunch> members;
  for (std::size_t i = 0; i < chunk.size(); ++i) members[i] = {chunk[i].m, chunk[i].n, chunk[i].k};
  const bool f32 = chunk[0].d_dtype == DType::kFP32;
  const bool kn = chunk[0].b_layout == BLayout::kKN;
  TileConfig cfg = ApplyOverride(ChooseGroupConfig(std::span(members.data(), chunk.size()), f32, kn,
                                                   limits.sm_count, limits.smem_optin),
                                 limits, debug_flags);
  if (cfg.stages <= 0) cfg.stages = MaxStages(cfg.block_m, cfg.block_n, f32, limits.smem_optin);
  cfg.swap_ab = false;  // grouped launches have no swap-AB instantiation
  if (!ConfigFits(cfg, f32, limits.smem_optin)) {
    return absl::InvalidArgumentError("sm90: tuning override does not fit");
  }
  return cfg;
}

// Cluster tiles of `user` under `cfg`, per batch entry.
int64_t ClusterTiles(const Problem& user, const TileConfig& cfg) {
  const Problem p = KernelView(user, cfg);
  const int64_t cluster_rows = int64_t{cfg.block_m} * cfg.cluster_m;
  return (p.m + cluster_rows - 1) / cluster_rows * ((p.n + cfg.block_n - 1) / cfg.block_n);
}

// Workspace bytes the tail split or stream-K of a launch of `tiles` cluster tiles whose shortest
// K is `k` can use under `cfg` (`one_k`: every tile has that K).
int64_t SplitBytesFor(int64_t tiles, int64_t k, bool one_k, const TileConfig& cfg, int sm_count) {
  const int64_t k_blocks = (k + cfg.block_k - 1) / cfg.block_k;
  // NOTE: the launch plans over the clusters that are resident together, which the occupancy
  // query may put below sm_count / cluster_m: size for the plan of any slot count down to half
  // of that (the most partial slots any plan can use is one per SM).
  const int64_t slots = sm_count / cfg.cluster_m;
  int64_t bytes = 0;
  for (int64_t s = slots / 2; s <= slots; ++s) {
    bytes = std::max(
        bytes, SplitWorkspaceBytes(PlanLaunchSplit(tiles, k_blocks, s, cfg.tail_splits, one_k),
                                   cfg.cluster_m, cfg.block_m, cfg.block_n));
  }
  return bytes;
}

}  // namespace

std::size_t WorkspaceBytes(const StridedBatch& args) {
  auto limits = Limits();
  if (!limits.ok()) return 0;
  int debug_flags = 0;
  auto cfg = ConfigFor(args, *limits, &debug_flags);
  if (!cfg.ok()) return 0;
  const int64_t tiles = ClusterTiles(args.problem, *cfg) * std::max<int64_t>(args.batch, 1);
  return static_cast<std::size_t>(
      SplitBytesFor(tiles, args.problem.k, true, *cfg, limits->sm_count));
}

std::size_t WorkspaceBytes(std::span<const Problem> group) {
  auto limits = Limits();
  if (!limits.ok() || group.empty()) return 0;
  // The launches of a group run one after another on the caller's stream: one workspace serves
  // them all.
  const std::vector<Problem> sorted = LaunchOrder(group);
  int64_t bytes = 0;
  for (std::size_t first = 0; first < sorted.size(); first += kMaxGroupPerLaunch) {
    const std::size_t count = std::min<std::size_t>(kMaxGroupPerLaunch, sorted.size() - first);
    std::span<const Problem> chunk(sorted.data() + first, count);
    int debug_flags = 0;
    auto cfg = GroupConfigFor(chunk, *limits, &debug_flags);
    if (!cfg.ok()) return 0;
    int64_t tiles = 0, k = chunk[0].k;
    for (const Problem& p : chunk) {
      tiles += ClusterTiles(p, *cfg);
      k = std::min(k, p.k);
    }
    bytes = std::max(bytes, SplitBytesFor(tiles, k, count == 1, *cfg, limits->sm_count));
  }
  return static_cast<std::size_t>(bytes);
}

namespace {

// UNIMPLEMENTED (the automatic dispatch then serves through cuBLASLt) when `cfg`'s compiled
// variant is not in `usable_variants`.
absl::Status CheckQualified(const TileConfig& cfg, uint64_t usable_variants) {
  const int v = TileVariant(cfg.block_m, cfg.block_n, cfg.swap_ab);
  if (VariantAllowed(usable_variants, v)) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat("sm90: variant ", v < 0 ? "unknown" : VariantName(v),
                                               " is not qualified on this device"));
}

}  // namespace

absl::Status Prepare(const StridedBatch& args, const LaunchOptions& opts, PreparedLaunch* out) {
  GEMM_ASSIGN_OR_RETURN(const DeviceLimits limits, Limits());
  const Problem& p = args.problem;
  int debug_flags = 0;
  GEMM_ASSIGN_OR_RETURN(const TileConfig cfg, ConfigFor(args, limits, &debug_flags));
  GEMM_RETURN_IF_ERROR(CheckQualified(cfg, opts.usable_variants));
  KernelParams<1>& params = out->params;
  params = {};
  params.debug_flags = debug_flags;
  GEMM_RETURN_IF_ERROR(BuildProblem(p, args.batch, args.stride_a, args.stride_b, args.stride_c,
                                    args.stride_d, cfg, false, &params.tma[0],
                                    &params.problems[0]));
  FinishParams(cfg, 1, std::max<int64_t>(args.batch, 1), &params);
  if (!AMnMajor(p, cfg)) {  // an MN-major A loads whole column boxes
    GEMM_RETURN_IF_ERROR(BuildATail(KernelView(p, cfg), args.batch,
                                    cfg.swap_ab ? args.stride_b : args.stride_a, cfg, &params));
  }
  if (params.total_tiles >= kMaxTiles) {
    return absl::InvalidArgumentError(
        absl::StrCat("sm90: ", params.total_tiles, " tiles in one launch (at most 2^31 - 1)"));
  }
  SplitWorkspace ws;
  if (opts.workspace != nullptr && opts.workspace_bytes > 0) {
    ws.ptr = opts.workspace;
    ws.bytes = opts.workspace_bytes;
    ws.forced_splits = cfg.tail_splits;
  }
  return CudaStatus(PlanFor(params, cfg, p.d_dtype, p.b_layout, limits.sm_count, ws, &out->shape),
                    "sm90 GEMM launch plan");
}

absl::Status Launch(const PreparedLaunch& launch, cudaStream_t stream) {
  KernelParams<1> params = launch.params;
  params.epoch = NextSplitEpoch();
  return CudaStatus(EnqueueSm90(launch.shape, &params, stream), "sm90 GEMM launch");
}

absl::Status Gemm(const StridedBatch& args, cudaStream_t stream, const LaunchOptions& opts) {
  PreparedLaunch launch;
  GEMM_RETURN_IF_ERROR(Prepare(args, opts, &launch));
  return Launch(launch, stream);
}

absl::Status GemmGrouped(std::span<const Problem> group, cudaStream_t stream,
                         const LaunchOptions& opts) {
  GEMM_ASSIGN_OR_RETURN(const DeviceLimits limits, Limits());
  const std::vector<Problem> sorted = LaunchOrder(group);
  // Every launch's variant is checked before the first is enqueued: a refused group is served
  // whole by the fallback, never half by this kernel.
  for (std::size_t first = 0; first < sorted.size(); first += kMaxGroupPerLaunch) {
    const std::size_t count = std::min<std::size_t>(kMaxGroupPerLaunch, sorted.size() - first);
    int debug_flags = 0;
    GEMM_ASSIGN_OR_RETURN(
        const TileConfig cfg,
        GroupConfigFor(std::span(sorted.data() + first, count), limits, &debug_flags));
    GEMM_RETURN_IF_ERROR(CheckQualified(cfg, opts.usable_variants));
  }
  for (std::size_t first = 0; first < sorted.size(); first += kMaxGroupPerLaunch) {
    const std::size_t count = std::min<std::size_t>(kMaxGroupPerLaunch, sorted.size() - first);
    std::span<const Problem> chunk(sorted.data() + first, count);
    int debug_flags = 0;
    GEMM_ASSIGN_OR_RETURN(const TileConfig cfg, GroupConfigFor(chunk, limits, &debug_flags));
    // NOTE: ~28 KB: on the heap, once per thread. A thread_local array would add 28 KB to the
    // static TLS of every thread of the process (libraries that start threads with small
    // stacks then fail to create them).
    static thread_local std::unique_ptr<KernelParams<kMaxGroupPerLaunch>> params_storage;
    if (params_storage == nullptr) {
      params_storage = std::make_unique<KernelParams<kMaxGroupPerLaunch>>();
    }
    KernelParams<kMaxGroupPerLaunch>& params = *params_storage;
    params = {};
    for (std::size_t i = 0; i < count; ++i) {
      GEMM_RETURN_IF_ERROR(BuildProblem(chunk[i], 1, 0, 0, 0, 0, cfg, true, &params.tma[3 * i],
                                        &params.problems[i]));
    }
    FinishParams(cfg, static_cast<int>(count), 1, &params);
    if (params.total_tiles >= kMaxTiles) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sm90: ", params.total_tiles, " tiles in one grouped launch (at most 2^31 - 1)"));
    }
    params.debug_flags = debug_flags;
    SplitWorkspace ws;
    if (opts.workspace != nullptr && opts.workspace_bytes > 0) {
      ws.ptr = opts.workspace;
      ws.bytes = opts.workspace_bytes;
      ws.forced_splits = cfg.tail_splits;
    }
    LaunchShape shape;
    GEMM_RETURN_IF_ERROR(CudaStatus(
        PlanFor(params, cfg, chunk[0].d_dtype, chunk[0].b_layout, limits.sm_count, ws, &shape),
        "sm90 grouped GEMM launch plan"));
    params.epoch = NextSplitEpoch();  // per launch: a later chunk reuses the workspace
    GEMM_RETURN_IF_ERROR(
        CudaStatus(EnqueueSm90(shape, &params, stream), "sm90 grouped GEMM launch"));
  }
  return absl::OkStatus();
}

}  // namespace gemm::kernel::sm90
