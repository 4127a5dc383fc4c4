// gemm_bench's measuring core (see bench_runner.h).
#include "bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench_device.h"
#include "common/status_macros.h"
#include "sm90/sm90_gemm.h"
#include "sm90/sm90_params.h"  // kDebugNoSplit
#include "sm90/small_m_gemm.h"

namespace gemm::bench {
namespace {

using kernel::BLayout;
using kernel::DType;
using kernel::KernelKind;
using kernel::LaunchOptions;
using kernel::Problem;
using kernel::StridedBatch;

absl::Status Cuda(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(err)));
}
absl::Status Cuda(int err, const char* what) { return Cuda(static_cast<cudaError_t>(err), what); }
absl::Status Cublas(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": cuBLAS status ", static_cast<int>(st)));
}

// Device allocations freed on scope exit.
class DeviceArena {
 public:
  ~DeviceArena() {
    for (void* p : ptrs_) cudaFree(p);
  }
  absl::StatusOr<void*> Alloc(std::size_t bytes) {
    void* p = nullptr;
    GEMM_RETURN_IF_ERROR(Cuda(cudaMalloc(&p, std::max<std::size_t>(bytes, 256)), "cudaMalloc"));
    ptrs_.push_back(p);
    return p;
  }

 private:
  std::vector<void*> ptrs_;
};

// Relative Frobenius error of `got` vs `ref` (rows x cols, pitch ld); counts NaN/Inf in `bad`.
absl::Status Compare(const void* got, const void* ref, int64_t rows, int64_t cols, int64_t ld,
                     bool f32, CompareSums* dev_sums, cudaStream_t stream) {
  return Cuda(CompareAccumulate(got, ref, rows, cols, ld, f32, dev_sums, stream), "compare");
}

}  // namespace

absl::StatusOr<std::unique_ptr<Bench>> Bench::Create(const BenchOptions& opts) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    return absl::FailedPreconditionError("gemm_bench needs a CUDA GPU");
  }
  std::unique_ptr<Bench> b(new Bench(opts));
  int dev = 0;
  GEMM_RETURN_IF_ERROR(Cuda(cudaGetDevice(&dev), "cudaGetDevice"));
  cudaDeviceProp prop;
  GEMM_RETURN_IF_ERROR(Cuda(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties"));
  b->device_name_ = prop.name;
  b->sm_count_ = prop.multiProcessorCount;
  b->l2_bytes_ = prop.l2CacheSize;
  GEMM_RETURN_IF_ERROR(
      Cuda(cudaStreamCreateWithFlags(&b->stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
  GEMM_RETURN_IF_ERROR(Cublas(cublasCreate(&b->cublas_), "cublasCreate"));
  GEMM_RETURN_IF_ERROR(Cublas(cublasSetStream(b->cublas_, b->stream_), "cublasSetStream"));
  const int reps = std::max(opts.reps, 1);
  b->start_.resize(2 * reps);  // two implementations interleaved
  b->stop_.resize(2 * reps);
  for (int i = 0; i < 2 * reps; ++i) {
    GEMM_RETURN_IF_ERROR(Cuda(cudaEventCreate(&b->start_[i]), "cudaEventCreate"));
    GEMM_RETURN_IF_ERROR(Cuda(cudaEventCreate(&b->stop_[i]), "cudaEventCreate"));
  }
  b->seed_ = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  if (opts.no_split || opts.tile_m > 0 || opts.stages > 0 || opts.cluster_m > 0 ||
      opts.group_m > 0 || opts.tail_splits != 0 || opts.swap_ab != 0 || opts.debug_flags != 0) {
    kernel::sm90::TuningOverride o;
    o.debug_flags = opts.debug_flags | (opts.no_split ? kernel::sm90::kDebugNoSplit : 0);
    o.block_m = opts.tile_m;
    o.block_n = opts.tile_n;
    o.stages = opts.stages;
    o.cluster_m = opts.cluster_m;
    o.group_m = opts.group_m;
    o.tail_splits = opts.tail_splits;
    o.swap_ab = opts.swap_ab;
    kernel::sm90::SetTuningOverride(o);
  }
  return b;
}

Bench::~Bench() {
  for (cudaEvent_t e : start_) cudaEventDestroy(e);
  for (cudaEvent_t e : stop_) cudaEventDestroy(e);
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) cudaStreamDestroy(stream_);
}

absl::StatusOr<std::vector<double>> Bench::TimeMedians(
    const std::vector<std::function<absl::Status(int)>>& launches, int nsets) {
  const int n = static_cast<int>(launches.size());
  const int reps = static_cast<int>(start_.size()) / 2;  // events for two implementations
  if (n < 1 || n > 2) return absl::InvalidArgumentError("TimeMedians times one or two launches");
  for (int i = 0; i < opts_.warmup; ++i) {
    for (const auto& launch : launches) GEMM_RETURN_IF_ERROR(launch(i % nsets));
  }
  // NOTE: the delay kernel holds the stream while the host queues every timed launch behind
  // it, so that back-to-back GPU execution is timed even for launches shorter than the host's
  // launch path. The implementations alternate launch by launch (ours, cuBLAS, ours, ...), so
  // both see the same clocks and temperature: timing them in two separate blocks let the power
  // state drift between the blocks (8192^3 measured 1.09x and 0.98x in one run).
  GEMM_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "warm-up"));
  if (!opts_.idle_stream) {
    GEMM_RETURN_IF_ERROR(Cuda(LaunchDelay(100.0 * n * reps + 1000.0, stream_), "delay"));
  }
  for (int r = 0; r < reps; ++r) {
    for (int i = 0; i < n; ++i) {
      const int e = r * n + i;
      if (opts_.idle_stream) GEMM_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "idle"));
      GEMM_RETURN_IF_ERROR(Cuda(cudaEventRecord(start_[e], stream_), "cudaEventRecord"));
      // NOTE: every launch takes the next operand set, so neither implementation finds the
      // other's operands of the same rep in L2 (with one set per rep, cuBLAS runs on what ours
      // has just loaded: 8192x8192 decode rows read ~3% faster for it on H100).
      const int set = opts_.same_set ? (opts_.warmup + r) % nsets : (opts_.warmup + e) % nsets;
      GEMM_RETURN_IF_ERROR(launches[i](set));
      GEMM_RETURN_IF_ERROR(Cuda(cudaEventRecord(stop_[e], stream_), "cudaEventRecord"));
    }
  }
  GEMM_RETURN_IF_ERROR(Cuda(cudaStreamSynchronize(stream_), "timed runs"));
  std::vector<double> medians;
  for (int i = 0; i < n; ++i) {
    std::vector<float> ms(reps);
    for (int r = 0; r < reps; ++r) {
      const int e = r * n + i;
      GEMM_RETURN_IF_ERROR(Cuda(cudaEventElapsedTime(&ms[r], start_[e], stop_[e]), "elapsed"));
    }
    std::sort(ms.begin(), ms.end());
    medians.push_back(reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]));
  }
  return medians;
}

absl::StatusOr<int> Bench::RotationCount(double set_bytes) {
  std::size_t free_b = 0, total_b = 0;
  GEMM_RETURN_IF_ERROR(Cuda(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"));
  const double budget = opts_.mem_fraction * static_cast<double>(free_b);
  // NOTE: at least 2 sets, and enough that the sets together exceed 3x L2, so no run finds its
  // operands in L2 from the run before.
  int n = static_cast<int>(std::ceil(3.0 * static_cast<double>(l2_bytes_) / set_bytes));
  n = std::clamp(n, 2, 64);
  while (n > 1 && n * set_bytes > budget) --n;
  if (n * set_bytes > budget) {
    return absl::ResourceExhaustedError(
        absl::StrCat("operands need ", set_bytes / 1e9, " GB, budget ", budget / 1e9, " GB"));
  }
  return n;
}

absl::StatusOr<double> Bench::CopyGbps() {
  std::size_t free_b = 0, total_b = 0;
  GEMM_RETURN_IF_ERROR(Cuda(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"));
  const std::size_t bytes = std::min<std::size_t>(std::size_t{1} << 30, free_b / 8);
  DeviceArena arena;
  GEMM_ASSIGN_OR_RETURN(void* const src, arena.Alloc(bytes));
  GEMM_ASSIGN_OR_RETURN(void* const dst, arena.Alloc(bytes));
  GEMM_RETURN_IF_ERROR(Cuda(FillRandomBf16(src, bytes / 2, NextSeed(), stream_), "fill"));
  auto copy = [&](int) {
    return Cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_),
                "cudaMemcpyAsync");
  };
  GEMM_ASSIGN_OR_RETURN(const std::vector<double> ms, TimeMedians({copy}, 1));
  return 2.0 * static_cast<double>(bytes) / (ms[0] * 1e-3) / 1e9;
}

absl::StatusOr<double> Bench::ReadGbps() {
  std::size_t free_b = 0, total_b = 0;
  GEMM_RETURN_IF_ERROR(Cuda(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"));
  const std::size_t bytes =
      std::min<std::size_t>(std::size_t{1} << 30, free_b / 8) & ~std::size_t{15};
  DeviceArena arena;
  GEMM_ASSIGN_OR_RETURN(void* const src, arena.Alloc(bytes));
  GEMM_ASSIGN_OR_RETURN(void* const sink, arena.Alloc(sizeof(unsigned)));
  GEMM_RETURN_IF_ERROR(Cuda(FillRandomBf16(src, bytes / 2, NextSeed(), stream_), "fill"));
  auto read = [&](int) {
    return Cuda(
        LaunchReadAll(src, static_cast<int64_t>(bytes), static_cast<unsigned*>(sink), stream_),
        "read kernel");
  };
  GEMM_ASSIGN_OR_RETURN(const std::vector<double> ms, TimeMedians({read}, 1));
  return static_cast<double>(bytes) / (ms[0] * 1e-3) / 1e9;
}

absl::StatusOr<double> Bench::EmptyLaunchUs() {
  GEMM_ASSIGN_OR_RETURN(
      const std::vector<double> ms,
      TimeMedians({[&](int) { return Cuda(LaunchEmpty(sm_count_, stream_), "empty kernel"); }}, 1));
  return ms[0] * 1e3;
}

bool Bench::ReadCheck(absl::Status st, const void* sums, BenchRow* row) {
  CompareSums host;
  if (st.ok()) {
    st = Cuda(cudaMemcpyAsync(&host, sums, sizeof(host), cudaMemcpyDeviceToHost, stream_), "copy");
  }
  if (st.ok()) st = Cuda(cudaStreamSynchronize(stream_), "check");
  if (st.ok()) {
    row->bad = host.bad;
    row->rel_err = std::sqrt(host.err2 / std::max(host.ref2, 1e-300));
    return true;
  }
  row->error = absl::StrCat("check: ", st.message());
  return cudaStreamSynchronize(stream_) == cudaSuccess;
}

void Bench::TimeBoth(const std::function<absl::Status(int)>& ours,
                     const std::function<absl::Status(int)>& cublas, int nsets, BenchRow* row) {
  absl::StatusOr<std::vector<double>> t = TimeMedians({ours, cublas}, nsets);
  // The WGMMA kernel's last configuration (tile, cluster, split-K), when it ran on this thread.
  const std::string launch = kernel::sm90::LastLaunchDescription();
  if (!launch.empty() &&
      (row->ours.rfind("Gemm(kSm90)", 0) == 0 || row->ours.rfind("GemmGrouped(kSm90)", 0) == 0 ||
       row->ours == "sm90_wgmma_direct") &&
      row->ctas == 0) {
    row->ours = absl::StrCat(row->ours, " ", launch);
  }
  if (t.ok()) {
    row->ours_ms = (*t)[0];
    row->cublas_ms = (*t)[1];
  } else {
    row->error =
        absl::StrCat(row->error, row->error.empty() ? "" : "; ", "timing: ", t.status().message());
    cudaStreamSynchronize(stream_);
  }
}

absl::StatusOr<std::vector<BenchRow>> Bench::RunSet(const std::string& set) {
  GEMM_ASSIGN_OR_RETURN(const std::vector<Shape> shapes,
                        LoadShapes(opts_.shapes_dir + "/" + set + ".txt"));
  std::vector<BenchRow> rows;
  for (BLayout layout : opts_.layouts) {
    if (set == "grouped" || set == "moe") {
      // One grouped call per group of the file; the mixture-of-experts groups give every
      // member its own weights.
      for (int g = 0; !shapes.empty() && g <= shapes.back().group; ++g) {
        std::vector<Shape> members;
        for (const Shape& s : shapes) {
          if (s.group == g) members.push_back(s);
        }
        if (!members.empty()) rows.push_back(RunGrouped(set, members, layout, set == "moe"));
      }
      continue;
    }
    for (const Shape& s : shapes) rows.push_back(RunStrided(set, s, layout));
  }
  return rows;
}

BenchRow Bench::RunStrided(const std::string& set, const Shape& s, BLayout layout) {
  BenchRow row;
  row.set = set;
  row.shape = s;
  row.layout = layout;
  const std::size_t es = kernel::DTypeSize(opts_.d_dtype);
  const int64_t a_elems = s.m * s.k, b_elems = s.n * s.k, d_elems = s.m * s.n;
  row.flops = 2.0 * s.m * s.n * s.k * s.batch;
  row.bytes = static_cast<double>(s.batch) * ((a_elems + b_elems) * 2.0 + d_elems * es);
  auto fail = [&](const absl::Status& st) {
    row.error = std::string(st.message());
    return row;
  };
  absl::StatusOr<int> nsets = RotationCount(row.bytes);
  if (!nsets.ok()) return fail(nsets.status());

  DeviceArena arena;
  std::vector<StridedBatch> args(*nsets);
  for (int i = 0; i < *nsets; ++i) {
    absl::StatusOr<void*> a = arena.Alloc(s.batch * a_elems * 2);
    absl::StatusOr<void*> b = arena.Alloc(s.batch * b_elems * 2);
    absl::StatusOr<void*> d = arena.Alloc(s.batch * d_elems * es);
    if (!a.ok() || !b.ok() || !d.ok()) return fail(absl::ResourceExhaustedError("cudaMalloc"));
    if (absl::Status st = Cuda(FillRandomBf16(*a, s.batch * a_elems, NextSeed(), stream_), "fill");
        !st.ok())
      return fail(st);
    if (absl::Status st = Cuda(FillRandomBf16(*b, s.batch * b_elems, NextSeed(), stream_), "fill");
        !st.ok())
      return fail(st);
    Problem& p = args[i].problem;
    p.m = s.m;
    p.n = s.n;
    p.k = s.k;
    p.a = *a;
    p.lda = s.k;
    p.b = *b;
    p.b_layout = layout;
    p.ldb = layout == BLayout::kNK ? s.k : s.n;
    p.d = *d;
    p.ldd = s.n;
    p.d_dtype = opts_.d_dtype;
    args[i].batch = s.batch;
    args[i].stride_a = a_elems;
    args[i].stride_b = b_elems;
    args[i].stride_d = d_elems;
  }

  // Ours: the public API with kSm90 (its dispatch picks the small-M path for M <= 128), or the
  // small-M kernel called directly.
  std::function<absl::Status(int)> ours;
  LaunchOptions ours_opts{.kind = KernelKind::kSm90};
  // --direct runs the small-M kernel for every M it accepts (<= 128), not only where the
  // dispatch would pick it.
  const bool direct = opts_.direct_small_m && s.m <= 128;
  kernel::sm90::SmallMPlan plan;
  std::size_t ws_ours = 0;
  // The cluster limits let the plan pick the tile-aligned grids the dispatch picks (none with
  // --stream_k or when the query fails).
  const absl::StatusOr<kernel::sm90::SmallMClusterLimits> limits =
      kernel::sm90::QuerySmallMClusterLimits();
  const kernel::sm90::SmallMClusterLimits* clusters =
      limits.ok() && !opts_.stream_k ? &*limits : nullptr;
  if (direct) {
    plan = kernel::sm90::PlanSmallM(args[0], sm_count_, opts_.force_ctas, clusters);
    ws_ours = plan.workspace_bytes;
    row.ours = "small_m_direct";
  } else {
    ws_ours = kernel::WorkspaceBytes(args[0], KernelKind::kSm90);
    row.ours = "Gemm(kSm90)";
  }
  if (opts_.sm90_main) {
    ws_ours = kernel::sm90::WorkspaceBytes(args[0]);
    row.ours = "sm90_wgmma_direct";
    row.ctas = 0;
  }
  if (!opts_.sm90_main && (direct || kernel::sm90::UseSmallM(args[0]))) {
    row.ctas =
        kernel::sm90::PlanSmallM(args[0], sm_count_, direct ? opts_.force_ctas : 0, clusters).ctas;
  }
  void* ws = nullptr;
  if (ws_ours > 0) {
    absl::StatusOr<void*> w = arena.Alloc(ws_ours);
    if (!w.ok()) return fail(w.status());
    ws = *w;
  }
  ours_opts.workspace = ws;
  ours_opts.workspace_bytes = ws_ours;
  if (opts_.sm90_main) {
    ours = [&](int i) { return kernel::sm90::Gemm(args[i], stream_, ours_opts); };
  } else if (direct) {
    ours = [&](int i) {
      return kernel::sm90::SmallMGemmWithPlan(args[i], plan, stream_, ws, ws_ours);
    };
  } else {
    ours = [&](int i) { return kernel::Gemm(args[i], stream_, ours_opts); };
  }
  const std::size_t ws_cublas_bytes = kernel::WorkspaceBytes(args[0], KernelKind::kCublasLt);
  LaunchOptions cublas_opts{.kind = KernelKind::kCublasLt};
  if (ws_cublas_bytes > 0) {
    absl::StatusOr<void*> w = arena.Alloc(ws_cublas_bytes);
    if (!w.ok()) return fail(w.status());
    cublas_opts.workspace = *w;
    cublas_opts.workspace_bytes = ws_cublas_bytes;
  }
  auto cublas = [&](int i) { return kernel::Gemm(args[i], stream_, cublas_opts); };

  if (opts_.check) {
    absl::StatusOr<void*> ref = arena.Alloc(s.batch * d_elems * es);
    absl::StatusOr<void*> sums = arena.Alloc(sizeof(CompareSums));
    if (!ref.ok() || !sums.ok()) return fail(absl::ResourceExhaustedError("cudaMalloc"));
    StridedBatch ref_args = args[0];
    ref_args.problem.d = *ref;
    absl::Status st = Cuda(cudaMemsetAsync(*ref, 0xFF, s.batch * d_elems * es, stream_), "poison");
    if (st.ok()) st = kernel::Gemm(ref_args, stream_, cublas_opts);
    if (st.ok())
      st =
          Cuda(cudaMemsetAsync(args[0].problem.d, 0xFF, s.batch * d_elems * es, stream_), "poison");
    if (st.ok()) st = ours(0);
    if (st.ok()) st = Cuda(cudaMemsetAsync(*sums, 0, sizeof(CompareSums), stream_), "memset");
    if (st.ok())
      st = Compare(args[0].problem.d, *ref, s.batch * s.m, s.n, s.n, opts_.d_dtype == DType::kFP32,
                   static_cast<CompareSums*>(*sums), stream_);
    if (!ReadCheck(st, *sums, &row)) return row;  // sticky CUDA error: give up
  }

  TimeBoth(ours, cublas, *nsets, &row);
  if (opts_.read_floor) TimeReadB(args, s.batch * b_elems * 2, &row);
  return row;
}

void Bench::TimeReadB(const std::vector<StridedBatch>& args, int64_t b_bytes, BenchRow* row) {
  const int64_t read_bytes = b_bytes & ~int64_t{15};  // whole 16-byte loads
  DeviceArena arena;
  absl::StatusOr<void*> sink = arena.Alloc(sizeof(unsigned));
  if (!sink.ok()) return;
  auto read = [&](int i) {
    return Cuda(
        LaunchReadAll(args[i].problem.b, read_bytes, static_cast<unsigned*>(*sink), stream_),
        "read kernel");
  };
  absl::StatusOr<std::vector<double>> t = TimeMedians({read}, static_cast<int>(args.size()));
  if (!t.ok()) return;
  row->read_b_ms = (*t)[0];
  row->read_b_bytes = read_bytes;
}

BenchRow Bench::RunGrouped(const std::string& set, const std::vector<Shape>& shapes, BLayout layout,
                           bool distinct_weights) {
  BenchRow row;
  row.set = set;
  row.layout = layout;
  row.problems = static_cast<int>(shapes.size());
  row.ours = "GemmGrouped(kSm90)";
  const std::size_t es = kernel::DTypeSize(opts_.d_dtype);
  auto fail = [&](const absl::Status& st) {
    row.error = std::string(st.message());
    return row;
  };
  double ad_bytes = 0;
  for (const Shape& s : shapes) {
    row.shape.m += s.m;  // the row reports sum(M) and the largest N, K
    row.shape.n = std::max(row.shape.n, s.n);
    row.shape.k = std::max(row.shape.k, s.k);
    row.flops += 2.0 * s.m * s.n * s.k;
    row.bytes += (s.m * s.k + s.n * s.k) * 2.0 + s.m * s.n * static_cast<double>(es);
    ad_bytes += s.m * s.k * 2.0 + s.m * s.n * static_cast<double>(es);
  }
  // NOTE: one operand set: a group touches far more than L2 (tens of GB of traffic per call).
  // Every problem has its own A and D; problems of one (N, K) share one random B (as weights of
  // equal shape would), which is read once per problem by both implementations; with
  // `distinct_weights` (experts) every problem has its own B.
  std::size_t free_b = 0, total_b = 0;
  if (absl::Status st = Cuda(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo"); !st.ok())
    return fail(st);
  double b_bytes = 0;
  if (distinct_weights) {
    for (const Shape& s : shapes) b_bytes += s.n * s.k * 2.0;
  }
  if (ad_bytes + b_bytes > opts_.mem_fraction * static_cast<double>(free_b))
    return fail(absl::ResourceExhaustedError("grouped operands do not fit"));
  DeviceArena arena;
  std::map<std::pair<int64_t, int64_t>, void*> weights;
  std::vector<Problem> group(shapes.size());
  int64_t max_mn = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    // Distinct weights: a key of its own per member (no (N, K) is negative).
    const std::pair<int64_t, int64_t> key =
        distinct_weights ? std::make_pair(-1 - static_cast<int64_t>(i), int64_t{0})
                         : std::make_pair(s.n, s.k);
    void*& w = weights[key];
    if (w == nullptr) {
      absl::StatusOr<void*> b = arena.Alloc(s.n * s.k * 2);
      if (!b.ok()) return fail(b.status());
      w = *b;
      if (absl::Status st = Cuda(FillRandomBf16(w, s.n * s.k, NextSeed(), stream_), "fill");
          !st.ok())
        return fail(st);
    }
    absl::StatusOr<void*> a = arena.Alloc(s.m * s.k * 2), d = arena.Alloc(s.m * s.n * es);
    if (!a.ok() || !d.ok()) return fail(absl::ResourceExhaustedError("cudaMalloc"));
    if (absl::Status st = Cuda(FillRandomBf16(*a, s.m * s.k, NextSeed(), stream_), "fill");
        !st.ok())
      return fail(st);
    Problem& p = group[i];
    p.m = s.m;
    p.n = s.n;
    p.k = s.k;
    p.a = *a;
    p.lda = s.k;
    p.b = w;
    p.b_layout = layout;
    p.ldb = layout == BLayout::kNK ? s.k : s.n;
    p.d = *d;
    p.ldd = s.n;
    p.d_dtype = opts_.d_dtype;
    max_mn = std::max(max_mn, s.m * s.n);
  }
  const std::size_t ws_bytes = kernel::WorkspaceBytes(group, KernelKind::kSm90);
  LaunchOptions ours_opts{.kind = KernelKind::kSm90};
  if (ws_bytes > 0) {
    absl::StatusOr<void*> w = arena.Alloc(ws_bytes);
    if (!w.ok()) return fail(w.status());
    ours_opts.workspace = *w;
    ours_opts.workspace_bytes = ws_bytes;
  }
  auto ours = [&](int) { return kernel::GemmGrouped(group, stream_, ours_opts); };

  // Baseline: cublasGemmGroupedBatchedEx, one group per problem (column-major view:
  // D^T[N,M] = op(B)^T · A^T).
  const int g = static_cast<int>(group.size());
  std::vector<cublasOperation_t> ta(g, layout == BLayout::kNK ? CUBLAS_OP_T : CUBLAS_OP_N);
  std::vector<cublasOperation_t> tb(g, CUBLAS_OP_N);
  std::vector<int> ms(g), ns(g), ks(g), ldas(g), ldbs(g), ldcs(g), sizes(g, 1);
  std::vector<float> alphas(g, 1.f), betas(g, 0.f);
  std::vector<const void*> ha(g), hb(g);
  std::vector<void*> hc(g);
  for (int i = 0; i < g; ++i) {
    ms[i] = static_cast<int>(group[i].n);
    ns[i] = static_cast<int>(group[i].m);
    ks[i] = static_cast<int>(group[i].k);
    ha[i] = group[i].b;
    ldas[i] = static_cast<int>(group[i].ldb);
    hb[i] = group[i].a;
    ldbs[i] = static_cast<int>(group[i].lda);
    hc[i] = group[i].d;
    ldcs[i] = static_cast<int>(group[i].ldd);
  }
  absl::StatusOr<void*> dptrs = arena.Alloc(3 * g * sizeof(void*));
  if (!dptrs.ok()) return fail(dptrs.status());
  void** dev_a = static_cast<void**>(*dptrs);
  void** dev_b = dev_a + g;
  void** dev_c = dev_b + g;
  {
    absl::Status st =
        Cuda(cudaMemcpy(dev_a, ha.data(), g * sizeof(void*), cudaMemcpyHostToDevice), "copy");
    if (st.ok())
      st = Cuda(cudaMemcpy(dev_b, hb.data(), g * sizeof(void*), cudaMemcpyHostToDevice), "copy");
    if (st.ok())
      st = Cuda(cudaMemcpy(dev_c, hc.data(), g * sizeof(void*), cudaMemcpyHostToDevice), "copy");
    if (!st.ok()) return fail(st);
  }
  const cudaDataType_t ctype = opts_.d_dtype == DType::kFP32 ? CUDA_R_32F : CUDA_R_16BF;
  auto cublas = [&](int) {
    return Cublas(cublasGemmGroupedBatchedEx(
                      cublas_, ta.data(), tb.data(), ms.data(), ns.data(), ks.data(), alphas.data(),
                      const_cast<const void* const*>(dev_a), CUDA_R_16BF, ldas.data(),
                      const_cast<const void* const*>(dev_b), CUDA_R_16BF, ldbs.data(), betas.data(),
                      dev_c, ctype, ldcs.data(), g, sizes.data(), CUBLAS_COMPUTE_32F),
                  "cublasGemmGroupedBatchedEx");
  };

  if (opts_.check) {
    // Ours into every D_i, then each problem through cuBLASLt into a reference buffer.
    absl::StatusOr<void*> ref = arena.Alloc(max_mn * es);
    absl::StatusOr<void*> sums = arena.Alloc(sizeof(CompareSums));
    if (!ref.ok() || !sums.ok()) return fail(absl::ResourceExhaustedError("cudaMalloc"));
    const std::size_t ws_ref_bytes =
        kernel::WorkspaceBytes(StridedBatch{group[0]}, KernelKind::kCublasLt);
    absl::StatusOr<void*> ws_ref = arena.Alloc(ws_ref_bytes);
    if (!ws_ref.ok()) return fail(ws_ref.status());
    absl::Status st = absl::OkStatus();
    for (const Problem& p : group) {
      if (st.ok()) st = Cuda(cudaMemsetAsync(p.d, 0xFF, p.m * p.n * es, stream_), "poison");
    }
    if (st.ok()) st = ours(0);
    if (st.ok()) st = Cuda(cudaMemsetAsync(*sums, 0, sizeof(CompareSums), stream_), "memset");
    for (const Problem& p : group) {
      if (!st.ok()) break;
      StridedBatch ref_args{p};
      ref_args.problem.d = *ref;
      st = Cuda(cudaMemsetAsync(*ref, 0xFF, p.m * p.n * es, stream_), "poison");
      if (st.ok())
        st = kernel::Gemm(
            ref_args, stream_,
            {.kind = KernelKind::kCublasLt, .workspace = *ws_ref, .workspace_bytes = ws_ref_bytes});
      if (st.ok())
        st = Compare(p.d, *ref, p.m, p.n, p.ldd, opts_.d_dtype == DType::kFP32,
                     static_cast<CompareSums*>(*sums), stream_);
    }
    if (!ReadCheck(st, *sums, &row)) return row;  // sticky CUDA error: give up
  }

  TimeBoth(ours, cublas, 1, &row);
  return row;
}

}  // namespace gemm::bench
