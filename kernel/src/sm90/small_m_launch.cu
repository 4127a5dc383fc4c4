// Host launch of the small-M (decode) kernel: argument checks, plan, shared-memory attribute,
// main launch and the PDL-chained split-K reduction. Instantiates the shipped configurations.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cluster_launch.h"
#include "common/status_macros.h"
#include "sm90/small_m_gemm.h"
#include "sm90/small_m_kernel.cuh"

namespace gemm::kernel::sm90 {
namespace {

using small_m::Params;

absl::Status CudaError(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("small-M GEMM: ", what, ": ", cudaGetErrorName(err), " (",
                                          cudaGetErrorString(err), ")"));
}

bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

absl::Status CheckArgs(const StridedBatch& args) {
  const Problem& p = args.problem;
  if (p.m < 1 || p.m > 128)
    return absl::InvalidArgumentError("small-M GEMM: M must be in [1, 128]");
  if (p.n < 1 || p.k < 1) return absl::InvalidArgumentError("small-M GEMM: N and K must be >= 1");
  if (args.batch < 1) return absl::InvalidArgumentError("small-M GEMM: batch must be >= 1");
  if (p.a == nullptr || p.b == nullptr || p.d == nullptr)
    return absl::InvalidArgumentError("small-M GEMM: A, B and D must be set");
  if (p.beta != 0.f && p.c == nullptr)
    return absl::InvalidArgumentError("small-M GEMM: beta != 0 needs C");
  const int64_t b_inner = p.b_layout == BLayout::kNK ? p.k : p.n;
  if (p.lda < p.k || p.ldb < b_inner || p.ldd < p.n || (p.beta != 0.f && p.ldc < p.n))
    return absl::InvalidArgumentError("small-M GEMM: leading dimension too small");
  // NOTE: cp.async moves 16-byte chunks: A and B rows and batch strides must keep 16-byte
  // alignment. C and D are accessed element-wise and need only element alignment.
  if (!Aligned16(p.a) || !Aligned16(p.b) || p.lda % 8 != 0 || p.ldb % 8 != 0 ||
      (args.batch > 1 && (args.stride_a % 8 != 0 || args.stride_b % 8 != 0)))
    return absl::InvalidArgumentError(
        "small-M GEMM: A and B need 16-byte aligned bases, pitches and batch strides");
  return absl::OkStatus();
}

// NOTE: cluster launches ask for more shared memory than the 16-row pipeline uses (108 KB), so
// that two CTAs never share an SM (2 x 116 KB > 228 KB): every CTA of the grid streams B on an
// SM of its own, as the one-CTA-per-SM stream-K grid does.
constexpr int kClusterSmemBytes = 116 * 1024;
static_assert(kClusterSmemBytes >= small_m::Config<16>::kSmemBytes);

// Raises the kernel's dynamic shared-memory limit once per device.
template <int kMT, bool kKN, typename OutT, bool kCluster>
absl::Status Prepare(int device) {
  static std::atomic<uint64_t> prepared{0};
  const uint64_t bit = uint64_t{1} << (device & 63);
  if ((prepared.load(std::memory_order_acquire) & bit) != 0) return absl::OkStatus();
  GEMM_RETURN_IF_ERROR(CudaError(
      cudaFuncSetAttribute(small_m::SmallMKernel<kMT, kKN, OutT, kCluster>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                           kCluster ? kClusterSmemBytes : small_m::Config<kMT>::kSmemBytes),
      "cudaFuncSetAttribute"));
  prepared.fetch_or(bit, std::memory_order_acq_rel);
  return absl::OkStatus();
}

template <int kMT, bool kKN, typename OutT>
absl::Status LaunchTyped(const Params& prm, bool fixup, cudaStream_t stream, int device) {
  using Cfg = small_m::Config<kMT>;
  if constexpr (kMT == 16) {
    if (prm.cluster_k > 1) {
      GEMM_RETURN_IF_ERROR((Prepare<kMT, kKN, OutT, true>(device)));
      const ClusterLaunch launch(prm.ctas, small_m::kThreads, prm.cluster_k, kClusterSmemBytes,
                                 stream);
      return CudaError(
          cudaLaunchKernelEx(&launch.cfg, small_m::SmallMKernel<kMT, kKN, OutT, true>, prm),
          "cluster kernel launch");
    }
  }
  auto* main_kernel = small_m::SmallMKernel<kMT, kKN, OutT>;
  GEMM_RETURN_IF_ERROR((Prepare<kMT, kKN, OutT, false>(device)));
  main_kernel<<<static_cast<unsigned>(prm.ctas), small_m::kThreads, Cfg::kSmemBytes, stream>>>(prm);
  GEMM_RETURN_IF_ERROR(CudaError(cudaGetLastError(), "main kernel launch"));
  if (!fixup) return absl::OkStatus();
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(prm.batch * prm.n_tiles), static_cast<unsigned>(prm.m));
  cfg.blockDim = dim3(small_m::kBlockN);
  cfg.stream = stream;
  // NOTE: programmatic dependent launch hides the fixup's launch latency behind the main
  // kernel's tail; the fixup waits (griddepcontrol.wait) for all of its writes.
  cudaLaunchAttribute attr = {};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return CudaError(cudaLaunchKernelEx(&cfg, small_m::SmallMFixupKernel<OutT>, prm),
                   "fixup kernel launch");
}

template <int kMT>
absl::Status LaunchM(const Params& prm, const StridedBatch& args, bool fixup, cudaStream_t stream,
                     int device) {
  const bool kn = args.problem.b_layout == BLayout::kKN;
  const bool f32 = args.problem.d_dtype == DType::kFP32;
  if (kn) {
    return f32 ? LaunchTyped<kMT, true, float>(prm, fixup, stream, device)
               : LaunchTyped<kMT, true, __nv_bfloat16>(prm, fixup, stream, device);
  }
  return f32 ? LaunchTyped<kMT, false, float>(prm, fixup, stream, device)
             : LaunchTyped<kMT, false, __nv_bfloat16>(prm, fixup, stream, device);
}

absl::StatusOr<int> CurrentSmCount(int* device) {
  GEMM_RETURN_IF_ERROR(CudaError(cudaGetDevice(device), "cudaGetDevice"));
  int sms = 0;
  GEMM_RETURN_IF_ERROR(
      CudaError(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, *device),
                "cudaDeviceGetAttribute"));
  return sms;
}

}  // namespace

absl::Status SmallMGemmWithPlan(const StridedBatch& args, const SmallMPlan& plan_in,
                                cudaStream_t stream, void* workspace, std::size_t workspace_bytes) {
  GEMM_RETURN_IF_ERROR(CheckArgs(args));
  int device = 0;
  GEMM_RETURN_IF_ERROR(CudaError(cudaGetDevice(&device), "cudaGetDevice"));
  const Problem& p = args.problem;
  SmallMPlan plan = plan_in;
  if (plan.split_tiles && (workspace == nullptr || workspace_bytes < plan.workspace_bytes)) {
    // Not enough scratch for partials: one CTA per tile, direct epilogue only.
    plan.ctas = std::max<int64_t>(args.batch, 1) * plan.n_tiles;
    plan.split_tiles = false;
    plan.workspace_bytes = 0;
  }
  const int64_t tiles = std::max<int64_t>(args.batch, 1) * plan.n_tiles;
  if (plan.cluster_k != 1 &&
      ((plan.cluster_k != 2 && plan.cluster_k != 4 && plan.cluster_k != 8) || plan.m_tile != 16 ||
       plan.split_tiles || plan.ctas != tiles * plan.cluster_k))
    return absl::InvalidArgumentError("small-M GEMM: inconsistent cluster plan");
  if (plan.ctas < 1 || plan.ctas > plan.total_iters || plan.ctas > 0x7fffffff ||
      plan.n_tiles != (p.n + plan.n_tile - 1) / plan.n_tile || plan.n_tile != small_m::kBlockN ||
      plan.k_blocks != (p.k + plan.k_block - 1) / plan.k_block ||
      plan.k_block != small_m::kBlockK || plan.m_tile < p.m ||
      plan.total_iters != std::max<int64_t>(args.batch, 1) * plan.n_tiles * plan.k_blocks)
    return absl::InvalidArgumentError("small-M GEMM: inconsistent plan");
  Params prm = {};
  prm.a = static_cast<const __nv_bfloat16*>(p.a);
  prm.lda = p.lda;
  prm.stride_a = args.stride_a;
  prm.b = static_cast<const __nv_bfloat16*>(p.b);
  prm.ldb = p.ldb;
  prm.stride_b = args.stride_b;
  prm.c = p.c;
  prm.ldc = p.ldc;
  prm.stride_c = args.stride_c;
  prm.d = p.d;
  prm.ldd = p.ldd;
  prm.stride_d = args.stride_d;
  prm.ws = static_cast<float*>(workspace);
  prm.m = p.m;
  prm.n = p.n;
  prm.k = p.k;
  prm.batch = std::max<int64_t>(args.batch, 1);
  prm.n_tiles = plan.n_tiles;
  prm.k_blocks = plan.k_blocks;
  prm.total_iters = plan.total_iters;
  prm.ctas = plan.ctas;
  prm.cluster_k = plan.cluster_k;
  prm.alpha = p.alpha;
  prm.beta = p.beta;
  switch (plan.m_tile) {
    case 16:
      return LaunchM<16>(prm, args, plan.split_tiles, stream, device);
    case 32:
      return LaunchM<32>(prm, args, plan.split_tiles, stream, device);
    case 64:
      return LaunchM<64>(prm, args, plan.split_tiles, stream, device);
    case 128:
      return LaunchM<128>(prm, args, plan.split_tiles, stream, device);
    default:
      return absl::InvalidArgumentError(absl::StrCat("small-M GEMM: bad m_tile ", plan.m_tile));
  }
}

namespace {

// The limits of `device` (see QuerySmallMClusterLimits).
SmallMClusterLimits ClusterLimits(int device) {
  // One entry per device, filled by the first query (concurrent first queries race benignly:
  // they store the same answer).
  constexpr int kMaxDevices = 64;
  static std::atomic<int64_t> cache[kMaxDevices][3];
  static std::atomic<bool> cached[kMaxDevices];
  const int slot = device % kMaxDevices;
  SmallMClusterLimits limits;
  int64_t* fields[3] = {&limits.of2, &limits.of4, &limits.of8};
  if (cached[slot].load(std::memory_order_acquire)) {
    for (int i = 0; i < 3; ++i) *fields[i] = cache[slot][i].load(std::memory_order_relaxed);
    return limits;
  }
  auto* kernel = small_m::SmallMKernel<16, false, __nv_bfloat16, true>;
  bool ok = Prepare<16, false, __nv_bfloat16, true>(device).ok();
  for (int i = 0; i < 3 && ok; ++i) {
    const int cs = 2 << i;
    const ClusterLaunch launch(cs * 16, small_m::kThreads, cs, kClusterSmemBytes, nullptr);
    int clusters = 0;
    ok = cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.cfg) == cudaSuccess;
    *fields[i] = ok ? clusters : 0;
  }
  if (!ok) {
    // NOTE: e.g. a device without clusters. Clear the error, or the next launch's
    // cudaGetLastError() would report it; zeros mean stream-K plans only.
    (void)cudaGetLastError();
    limits = SmallMClusterLimits{};
  }
  for (int i = 0; i < 3; ++i) cache[slot][i].store(*fields[i], std::memory_order_relaxed);
  cached[slot].store(true, std::memory_order_release);
  return limits;
}

}  // namespace

absl::StatusOr<SmallMClusterLimits> QuerySmallMClusterLimits() {
  int device = 0;
  GEMM_RETURN_IF_ERROR(CudaError(cudaGetDevice(&device), "cudaGetDevice"));
  return ClusterLimits(device);
}

absl::Status SmallMGemm(const StridedBatch& args, cudaStream_t stream, const LaunchOptions& opts) {
  GEMM_RETURN_IF_ERROR(CheckArgs(args));
  int device = 0;
  absl::StatusOr<int> sms = CurrentSmCount(&device);
  if (!sms.ok()) return sms.status();
  // NOTE: the device from CurrentSmCount: no second cudaGetDevice on this per-request path.
  const SmallMClusterLimits limits = ClusterLimits(device);
  const SmallMPlan plan = PlanSmallM(args, *sms, 0, &limits);
  return SmallMGemmWithPlan(args, plan, stream, opts.workspace, opts.workspace_bytes);
}

}  // namespace gemm::kernel::sm90
