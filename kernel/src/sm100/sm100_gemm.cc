// Host entry points of the SM100 kernel (sm100_gemm.h): picks the variant (wide 256x256 tiles,
// their 2-M-wave 512x256 form for large shapes, or the small-M swap-AB kernel), encodes the TMA
// tensor maps, sizes the grid from the device (persistent, or one cluster per tile with Cluster
// Launch Control) and launches through sm100_launch.cu. Host C++ only (CUDA driver/runtime API,
// absl).
#include "sm100/sm100_gemm.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "cuda_status.h"
#include "sm100/sm100_choice.h"
#include "sm100/sm100_clc.h"
#include "sm100/sm100_config.h"
#include "sm100/sm100_params.h"
#include "sm100/sm100_scheduler.h"
#include "sm100/sm100_split.h"
#include "validate.h"

namespace gemm::kernel::sm100 {
namespace {

// Device facts the launch needs, read at run time (a GB200 has 148 SMs, not 192).
struct DeviceInfo {
  int sm_count = 0;
  int smem_optin = 0;
};

absl::StatusOr<DeviceInfo> ReadDevice(int dev) {
  int major = 0, minor = 0;
  DeviceInfo info;
  GEMM_RETURN_IF_ERROR(CudaStatus(
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "cc major"));
  GEMM_RETURN_IF_ERROR(CudaStatus(
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "cc minor"));
  if (major != 10 || minor != 0) {
    // sm_100a code runs on compute capability 10.0 only ("a" targets are not forward compatible).
    return absl::FailedPreconditionError(
        absl::StrCat("sm100 kernel needs compute capability 10.0, device has ", major, ".", minor));
  }
  GEMM_RETURN_IF_ERROR(CudaStatus(
      cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, dev), "SM count"));
  GEMM_RETURN_IF_ERROR(CudaStatus(
      cudaDeviceGetAttribute(&info.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
      "smem opt-in"));
  return info;
}

// The current device's facts, read once per device (they never change while the process runs).
absl::StatusOr<DeviceInfo> QueryDevice() {
  constexpr int kMaxDevices = 64;
  static absl::Mutex mu(absl::kConstInit);
  static DeviceInfo cache[kMaxDevices] ABSL_GUARDED_BY(mu);
  int dev = 0;
  GEMM_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&dev), "cudaGetDevice"));
  if (dev < 0 || dev >= kMaxDevices) return ReadDevice(dev);
  absl::MutexLock lock(&mu);
  if (cache[dev].sm_count == 0) {
    GEMM_ASSIGN_OR_RETURN(cache[dev], ReadDevice(dev));
  }
  return cache[dev];
}

// Scheduling and tile-shape choices of one call, from the environment (read per call, so tests
// can switch them; the public LaunchOptions has no SM100-specific fields):
//   GEMM_SM100_CLC=1        Cluster Launch Control scheduler (default off, see docs/sm100.md)
//   GEMM_SM100_M_WAVES=1|2  force the wide kernel's M-waves (default: ChooseMWaves)
struct Tuning {
  bool clc = false;
  int m_waves = 0;  // 0: heuristic
};

Tuning ReadTuning() {
  Tuning t;
  const char* clc = std::getenv("GEMM_SM100_CLC");
  t.clc = clc != nullptr && std::strcmp(clc, "1") == 0;
  const char* waves = std::getenv("GEMM_SM100_M_WAVES");
  if (waves != nullptr && (std::strcmp(waves, "1") == 0 || std::strcmp(waves, "2") == 0)) {
    t.m_waves = waves[0] - '0';
  }
  return t;
}

// Rank-3 tiled tensor map over a row-major [batch][outer][inner] bf16/f32 array.
struct MapSpec {
  const void* ptr = nullptr;
  uint64_t inner = 0, outer = 0, batch = 1;
  uint64_t pitch_bytes = 0, batch_stride_bytes = 0;
  uint32_t box_inner = 0, box_outer = 0;
  CUtensorMapDataType dtype = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
};

// cuTensorMapEncodeTiled through the runtime's driver entry point: the library does not link
// libcuda, so binaries start on machines without a driver.
absl::StatusOr<PFN_cuTensorMapEncodeTiled_v12000> LookUpEncodeFn() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  GEMM_RETURN_IF_ERROR(CudaStatus(
      cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q),
      "cudaGetDriverEntryPointByVersion"));
  if (q != cudaDriverEntryPointSuccess || fn == nullptr) {
    return absl::InternalError("cuTensorMapEncodeTiled not found in the driver");
  }
  return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
}

// The entry point, looked up once per process.
absl::StatusOr<PFN_cuTensorMapEncodeTiled_v12000> EncodeFn() {
  static const absl::StatusOr<PFN_cuTensorMapEncodeTiled_v12000> fn = LookUpEncodeFn();
  return fn;
}

absl::StatusOr<CUtensorMap> Encode(const MapSpec& s) {
  GEMM_ASSIGN_OR_RETURN(const PFN_cuTensorMapEncodeTiled_v12000 encode, EncodeFn());
  CUtensorMap map;
  const cuuint64_t dims[3] = {s.inner, s.outer, s.batch};
  // A single entry still needs a valid batch stride: use the whole matrix.
  const uint64_t batch_stride = s.batch > 1 ? s.batch_stride_bytes : s.pitch_bytes * s.outer;
  const cuuint64_t strides[2] = {s.pitch_bytes, batch_stride};
  const cuuint32_t box[3] = {s.box_inner, s.box_outer, 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult res =
      encode(&map, s.dtype, 3, const_cast<void*>(s.ptr), dims, strides, box, elem_strides,
             CU_TENSOR_MAP_INTERLEAVE_NONE, s.swizzle, s.l2, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (res != CUDA_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("cuTensorMapEncodeTiled: CUresult ", static_cast<int>(res)));
  }
  return map;
}

// Per-entry strides in elements of a strided batch (0 for a single problem).
struct BatchStrides {
  int64_t batch = 1;
  int64_t a = 0, b = 0, c = 0, d = 0;
  int64_t d_batch = 0;  // slices of the D map when not `batch` (split-K partials)
};

// Builds the X/Y/C/D maps of `p` for the variant `key` (shape must match ProblemShape's X/Y).
absl::StatusOr<ProblemMaps> BuildMaps(const Problem& p, const BatchStrides& bs,
                                      const VariantKey& key) {
  const uint64_t batch = static_cast<uint64_t>(bs.batch);
  // Every box comes from the variant's KernelConfig (sm100_variant.h), as do the device's
  // expect_tx bytes: the two cannot drift apart.
  const Geometry g = GeometryOf(key);
  const Box& a_box = key.swap_ab ? g.y : g.x;  // A: [M, K] row-major, always K-major
  const Box& b_box = key.swap_ab ? g.x : g.y;  // B: [N, K] (K-major) or [K, N] (MN-major)
  MapSpec a{.ptr = p.a,
            .inner = static_cast<uint64_t>(p.k),
            .outer = static_cast<uint64_t>(p.m),
            .batch = batch,
            .pitch_bytes = static_cast<uint64_t>(p.lda) * 2,
            .batch_stride_bytes = static_cast<uint64_t>(bs.a) * 2,
            .box_inner = a_box.inner,
            .box_outer = a_box.outer};
  const bool b_mn = p.b_layout == BLayout::kKN;
  MapSpec b{.ptr = p.b,
            .inner = static_cast<uint64_t>(b_mn ? p.n : p.k),
            .outer = static_cast<uint64_t>(b_mn ? p.k : p.n),
            .batch = batch,
            .pitch_bytes = static_cast<uint64_t>(p.ldb) * 2,
            .batch_stride_bytes = static_cast<uint64_t>(bs.b) * 2,
            .box_inner = b_box.inner,
            .box_outer = b_box.outer};
  // D (and C): [M, N] row-major.
  const uint64_t es = DTypeSize(p.d_dtype);
  const CUtensorMapDataType out_type = p.d_dtype == DType::kFP32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                                 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  MapSpec d{.ptr = p.d,
            .inner = static_cast<uint64_t>(p.n),
            .outer = static_cast<uint64_t>(p.m),
            .batch = bs.d_batch > 0 ? static_cast<uint64_t>(bs.d_batch) : batch,
            .pitch_bytes = static_cast<uint64_t>(p.ldd) * es,
            .batch_stride_bytes = static_cast<uint64_t>(bs.d) * es,
            .box_inner = g.out.inner,
            .box_outer = g.out.outer,
            .dtype = out_type,
            .swizzle = g.out_swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
            .l2 = CU_TENSOR_MAP_L2_PROMOTION_NONE};
  MapSpec c = d;
  if (p.beta != 0.0f && p.c != nullptr) {
    c.ptr = p.c;
    c.batch = batch;
    c.pitch_bytes = static_cast<uint64_t>(p.ldc) * es;
    c.batch_stride_bytes = static_cast<uint64_t>(bs.c) * es;
    c.l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  }
  ProblemMaps maps;
  GEMM_ASSIGN_OR_RETURN(maps.x, Encode(key.swap_ab ? b : a));
  GEMM_ASSIGN_OR_RETURN(maps.y, Encode(key.swap_ab ? a : b));
  GEMM_ASSIGN_OR_RETURN(maps.c, Encode(c));
  GEMM_ASSIGN_OR_RETURN(maps.d, Encode(d));
  return maps;
}

BatchQuery QueryOf(const Problem& p, int64_t batch) {
  // C is read only when beta != 0 and a C pointer exists.
  return BatchQuery{.m = p.m,
                    .n = p.n,
                    .k = p.k,
                    .batch = batch,
                    .b_kn = p.b_layout == BLayout::kKN,
                    .out_f32 = p.d_dtype == DType::kFP32,
                    .alpha = p.alpha,
                    .beta = p.c != nullptr ? p.beta : 0.0f};
}

ProblemShape ShapeOf(const Problem& p, bool swap_ab) {
  return sm100::ShapeOf(QueryOf(p, 1), swap_ab);
}

VariantKey KeyOf(const Problem& p, bool swap_ab) {
  return sm100::KeyOf(p.b_layout == BLayout::kKN, p.d_dtype == DType::kFP32, swap_ab);
}

// UNIMPLEMENTED (the automatic dispatch then serves the call through cuBLASLt) unless `key` is
// among the `usable` variants (LaunchOptions::usable_variants).
absl::Status CheckUsable(const VariantKey& key, uint64_t usable) {
  if ((usable >> VariantIndex(key)) & 1u) return absl::OkStatus();
  return absl::UnimplementedError(
      absl::StrCat("sm100 variant ", VariantName(key), " is not qualified on this device"));
}

// Co-resident clusters of `key` on the current device (occupancy), queried once per device and
// variant; 0 when unknown.
int ResidentClusters(const VariantKey& key) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices][kNumVariants] = {};  // 0: not queried yet
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
    return MaxActiveClusters(key);
  }
  std::atomic<int>& slot = cache[dev][VariantIndex(key)];
  int n = slot.load(std::memory_order_relaxed);
  if (n == 0) {
    n = MaxActiveClusters(key);
    if (n > 0) slot.store(n, std::memory_order_relaxed);
  }
  return n;
}

// Persistent grid: one 2-CTA cluster per co-resident pair of SMs, never more than the tiles.
// With Cluster Launch Control: one cluster per work unit (running clusters cancel the rest).
absl::StatusOr<int> NumClusters(const VariantKey& key, const DeviceInfo& dev, int64_t tiles,
                                bool clc = false) {
  if (clc) {
    constexpr int64_t kMaxClusters = (int64_t{1} << 30) - 1;  // gridDim.x = 2 * clusters
    const int64_t n = ClcGridClusters(tiles);
    if (n > kMaxClusters) {
      return absl::UnimplementedError("sm100 kernel: too many tiles for a CLC grid");
    }
    if (SmemBytes(key) > static_cast<uint32_t>(dev.smem_optin)) {
      return absl::FailedPreconditionError("sm100 kernel: shared memory over the device limit");
    }
    return static_cast<int>(std::max<int64_t>(n, 1));
  }
  if (SmemBytes(key) > static_cast<uint32_t>(dev.smem_optin)) {
    return absl::FailedPreconditionError(absl::StrCat("sm100 kernel needs ", SmemBytes(key),
                                                      " B of shared memory, device allows ",
                                                      dev.smem_optin));
  }
  int clusters = ResidentClusters(key);
  if (clusters <= 0) clusters = dev.sm_count / 2;
  if (clusters <= 0) return absl::FailedPreconditionError("no SMs for the sm100 kernel");
  return static_cast<int>(std::min<int64_t>(clusters, std::max<int64_t>(tiles, 1)));
}

// Scratch memory the caller lent for split-K partials (may be empty).
struct Scratch {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

// Split-K launch of the small-M kernel: FP32 partials [splits][m][n] into `scratch`, then the
// reduction applies alpha, beta and C and writes D.
absl::Status LaunchSplitK(const Problem& p, int32_t splits, int clusters, const Scratch& scratch,
                          bool clc, cudaStream_t stream) {
  VariantKey key = KeyOf(p, /*swap_ab=*/true);
  key.out_f32 = true;  // partials
  Problem partial = p;
  partial.d = scratch.ptr;
  partial.ldd = SplitPitch(p.n);
  partial.d_dtype = DType::kFP32;
  partial.c = nullptr;
  partial.alpha = 1.0f;
  partial.beta = 0.0f;
  BatchStrides bs;
  bs.d_batch = splits;  // the partial map's third dimension: one slice per split
  bs.d = p.m * partial.ldd;
  KernelParams params{};
  GEMM_ASSIGN_OR_RETURN(params.maps, BuildMaps(partial, bs, key));
  params.shape = ShapeOf(partial, true);
  params.shape.k_splits = splits;
  params.num_problems = 1;
  params.group_x = kGroupX;
  params.use_clc = clc ? 1 : 0;
  GEMM_RETURN_IF_ERROR(
      CudaStatus(static_cast<cudaError_t>(LaunchVariant(key, params, clusters, stream)),
                 "sm100 split-K kernel launch"));
  SplitReduceArgs r;
  r.partials = static_cast<const float*>(scratch.ptr);
  r.splits = splits;
  r.m = static_cast<int32_t>(p.m);
  r.n = static_cast<int32_t>(p.n);
  r.ldw = partial.ldd;
  r.slice_elems = bs.d;
  r.alpha = p.alpha;
  r.beta = p.c != nullptr ? p.beta : 0.0f;
  r.c = p.c;
  r.ldc = p.ldc;
  r.d = p.d;
  r.ldd = p.ldd;
  r.out_f32 = p.d_dtype == DType::kFP32;
  return CudaStatus(static_cast<cudaError_t>(LaunchSplitReduce(r, stream)),
                    "sm100 split-K reduction");
}

absl::Status LaunchBatch(const Problem& p, const BatchStrides& bs, cudaStream_t stream,
                         const DeviceInfo& dev, uint64_t usable, const Scratch& scratch = {}) {
  const Tuning tuning = ReadTuning();
  BatchQuery q = QueryOf(p, bs.batch);
  q.forced_m_waves = tuning.m_waves;
  if (reinterpret_cast<uintptr_t>(scratch.ptr) % 16 == 0 && scratch.ptr != nullptr) {
    q.scratch_bytes = scratch.bytes;
  }
  // Co-resident clusters (one CTA per SM for every variant: the same for 1 and 2 M-waves).
  GEMM_ASSIGN_OR_RETURN(q.resident_clusters, NumClusters(KeyOf(p, p.m <= kSmallM), dev, INT32_MAX));
  const BatchChoice choice = ChooseBatch(q);
  GEMM_RETURN_IF_ERROR(CheckUsable(choice.key, usable));
  if (choice.splits > 1) {
    const int64_t units = choice.tiles * choice.splits;
    const int split_clusters =
        tuning.clc ? static_cast<int>(units)
                   : static_cast<int>(std::min<int64_t>(q.resident_clusters, units));
    return LaunchSplitK(p, choice.splits, split_clusters, scratch, tuning.clc, stream);
  }
  KernelParams params{};
  params.shape = sm100::ShapeOf(q, choice.key.swap_ab);
  params.group_maps = nullptr;
  params.group_shapes = nullptr;
  params.num_problems = static_cast<int32_t>(bs.batch);
  params.group_x = kGroupX;
  params.use_clc = tuning.clc ? 1 : 0;
  int clusters =
      static_cast<int>(std::min<int64_t>(q.resident_clusters, std::max<int64_t>(choice.tiles, 1)));
  if (tuning.clc) {
    GEMM_ASSIGN_OR_RETURN(clusters, NumClusters(choice.key, dev, choice.tiles, /*clc=*/true));
  }
  GEMM_ASSIGN_OR_RETURN(params.maps, BuildMaps(p, bs, choice.key));
  return CudaStatus(static_cast<cudaError_t>(LaunchVariant(choice.key, params, clusters, stream)),
                    "sm100 kernel launch");
}

// A batch stride TMA can express: a positive multiple of 16 bytes.
bool TmaStride(int64_t stride_elems, std::size_t elem_bytes) {
  const int64_t bytes = stride_elems * static_cast<int64_t>(elem_bytes);
  return bytes > 0 && bytes % 16 == 0;
}

constexpr std::size_t kGroupAlign = 128;

std::size_t GroupMapsBytes(std::size_t n) {
  return (n * sizeof(ProblemMaps) + kGroupAlign - 1) / kGroupAlign * kGroupAlign;
}

}  // namespace

absl::Status Gemm(const StridedBatch& args, cudaStream_t stream, const LaunchOptions& opts) {
  GEMM_ASSIGN_OR_RETURN(const DeviceInfo dev, QueryDevice());
  const Problem& p = args.problem;
  // UNIMPLEMENTED lets the automatic dispatch fall back to cuBLASLt.
  if (!TmaCompatible(p)) {
    return absl::UnimplementedError("sm100 kernel needs 16-byte aligned pointers and pitches");
  }
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX || args.batch > INT32_MAX) {
    return absl::UnimplementedError("sm100 kernel: dimension over 2^31");
  }
  const std::size_t es = DTypeSize(p.d_dtype);
  const bool needs_c = p.beta != 0.0f && p.c != nullptr;
  const bool one_launch =
      args.batch == 1 ||
      (TmaStride(args.stride_a, 2) && TmaStride(args.stride_b, 2) && TmaStride(args.stride_d, es) &&
       (!needs_c || TmaStride(args.stride_c, es)));
  if (one_launch) {
    BatchStrides bs{args.batch, args.stride_a, args.stride_b, args.stride_c, args.stride_d};
    return LaunchBatch(p, bs, stream, dev, opts.usable_variants,
                       Scratch{opts.workspace, opts.workspace_bytes});
  }
  // Strides TMA cannot express (a broadcast operand with stride 0): one launch per entry, as
  // long as every entry stays 16-byte aligned.
  auto aligned = [](int64_t stride, std::size_t elem) {
    return (stride * static_cast<int64_t>(elem)) % 16 == 0;
  };
  if (!aligned(args.stride_a, 2) || !aligned(args.stride_b, 2) || !aligned(args.stride_d, es) ||
      (needs_c && !aligned(args.stride_c, es))) {
    return absl::UnimplementedError("sm100 kernel needs 16-byte aligned batch strides");
  }
  for (int64_t i = 0; i < args.batch; ++i) {
    Problem e = p;
    e.a = static_cast<const uint16_t*>(p.a) + i * args.stride_a;
    e.b = static_cast<const uint16_t*>(p.b) + i * args.stride_b;
    if (p.c != nullptr) e.c = static_cast<const char*>(p.c) + i * args.stride_c * es;
    e.d = static_cast<char*>(p.d) + i * args.stride_d * es;
    GEMM_RETURN_IF_ERROR(LaunchBatch(e, BatchStrides{}, stream, dev, opts.usable_variants));
  }
  return absl::OkStatus();
}

absl::Status GemmGrouped(std::span<const Problem> group, cudaStream_t stream,
                         const LaunchOptions& opts) {
  if (group.empty()) return absl::OkStatus();
  GEMM_ASSIGN_OR_RETURN(const DeviceInfo dev, QueryDevice());
  for (const Problem& p : group) {
    if (!TmaCompatible(p) || p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX) {
      return absl::UnimplementedError(
          "sm100 kernel needs 16-byte aligned pointers and pitches and dimensions below 2^31");
    }
  }
  const std::size_t need = WorkspaceBytes(group);
  if (opts.workspace == nullptr || opts.workspace_bytes < need ||
      reinterpret_cast<uintptr_t>(opts.workspace) % kGroupAlign != 0) {
    // No (usable) workspace for the descriptors: one launch per problem, still correct.
    for (const Problem& p : group)
      GEMM_RETURN_IF_ERROR(LaunchBatch(p, BatchStrides{}, stream, dev, opts.usable_variants));
    return absl::OkStatus();
  }
  // The grouped launch uses the wide kernel for every problem (b_layout and d_dtype are shared).
  const VariantKey key = KeyOf(group[0], /*swap_ab=*/false);
  GEMM_RETURN_IF_ERROR(CheckUsable(key, opts.usable_variants));
  // Separate, properly aligned host arrays (CUtensorMap is 64-byte aligned).
  std::vector<ProblemMaps> maps(group.size());
  std::vector<ProblemShape> shapes(group.size());
  for (std::size_t i = 0; i < group.size(); ++i) {
    GEMM_ASSIGN_OR_RETURN(maps[i], BuildMaps(group[i], BatchStrides{}, key));
    shapes[i] = ShapeOf(group[i], false);
  }
  uint8_t* const ws = static_cast<uint8_t*>(opts.workspace);
  const std::size_t shapes_offset = GroupMapsBytes(group.size());
  // NOTE: pageable sources: each copy is staged before cudaMemcpyAsync returns.
  GEMM_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(ws, maps.data(), maps.size() * sizeof(ProblemMaps),
                                 cudaMemcpyHostToDevice, stream),
                 "copy group tensor maps"));
  GEMM_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(ws + shapes_offset, shapes.data(), shapes.size() * sizeof(ProblemShape),
                      cudaMemcpyHostToDevice, stream),
      "copy group shapes"));
  KernelParams params{};
  params.maps = maps[0];  // unused by the grouped path; any valid maps
  params.group_maps = reinterpret_cast<const ProblemMaps*>(ws);
  params.group_shapes = reinterpret_cast<const ProblemShape*>(ws + shapes_offset);
  params.num_problems = static_cast<int32_t>(group.size());
  params.group_x = kGroupX;
  const bool clc = ReadTuning().clc;
  params.use_clc = clc ? 1 : 0;
  // Groups keep one M-wave (mixed shapes; the TMEM double buffer hides the many epilogues).
  const int64_t tiles = TotalTiles(key, shapes.data(), params.num_problems, false);
  GEMM_ASSIGN_OR_RETURN(const int clusters, NumClusters(key, dev, tiles, clc));
  return CudaStatus(static_cast<cudaError_t>(LaunchVariant(key, params, clusters, stream)),
                    "sm100 grouped kernel launch");
}

std::size_t WorkspaceBytes(const StridedBatch& args) {
  // Split-K partials of the small-M kernel (single problems only).
  const Problem& p = args.problem;
  if (args.batch != 1 || p.m > kSmallM || p.m <= 0 || p.n <= 0) return 0;
  return static_cast<std::size_t>(SplitWorkspaceBytes(p.m, p.n));
}

std::size_t WorkspaceBytes(std::span<const Problem> group) {
  if (group.empty()) return 0;
  return GroupMapsBytes(group.size()) + group.size() * sizeof(ProblemShape);
}

}  // namespace gemm::kernel::sm100
