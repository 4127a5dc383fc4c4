// Runs one qualification case on the current device: the native kernel and cuBLASLt on the same
// fresh random operands, compared (see qualification_runner.h).
#include "server/gpu/qualification_runner.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/bf16.h"
#include "common/reference_gemm.h"
#include "common/status_macros.h"
#include "gemm/qualification.h"
#include "server/gpu/cuda_util.h"

namespace gemm::gpu {
namespace {

kernel::Problem Shape(const kernel::QualificationProblem& q) {
  kernel::Problem p;
  p.m = q.m;
  p.n = q.n;
  p.k = q.k;
  p.b_layout = q.b_layout;
  p.d_dtype = q.d_dtype;
  p.alpha = q.alpha;
  p.beta = q.beta;
  p.lda = q.k;
  p.ldb = q.b_layout == kernel::BLayout::kKN ? q.n : q.k;
  p.ldc = p.ldd = q.n;
  return p;
}

// Device copies of one problem's operands (dense, pitch = row length; all shapes below keep
// rows a multiple of 16 bytes).
struct Operands {
  std::string a, b, c;  // host bytes (bf16 A, B; d_dtype C)
  void *da = nullptr, *db = nullptr, *dc = nullptr, *dd = nullptr;
  int64_t d_bytes = 0;
};

std::string RandomBytes(int64_t elems, kernel::DType t, std::mt19937_64& gen) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::string out(elems * kernel::DTypeSize(t), '\0');
  for (int64_t i = 0; i < elems; ++i) {
    const float f = dist(gen);
    if (t == kernel::DType::kBF16) {
      const uint16_t h = FloatToBf16(f);
      std::memcpy(out.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(out.data() + 4 * i, &f, 4);
    }
  }
  return out;
}

std::vector<float> Decode(const std::string& bytes, kernel::DType t) {
  const size_t es = kernel::DTypeSize(t);
  std::vector<float> out(bytes.size() / es);
  for (size_t i = 0; i < out.size(); ++i) {
    if (t == kernel::DType::kBF16) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      out[i] = Bf16ToFloat(h);
    } else {
      std::memcpy(&out[i], bytes.data() + 4 * i, 4);
    }
  }
  return out;
}

// max |x - y| / max |y|; +inf on any non-finite x where y is finite, or size mismatch.
double MaxRelDiff(const std::vector<float>& x, const std::vector<float>& y) {
  if (x.size() != y.size()) return INFINITY;
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]) && std::isfinite(y[i])) return INFINITY;
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(x[i]) - y[i]));
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(y[i])));
  }
  return max_diff / std::max(max_ref, 1e-30);
}

class Runner {
 public:
  Runner() = default;
  ~Runner() {
    for (void* p : allocs_) cudaFree(p);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (workspace_ != nullptr) cudaFree(workspace_);
  }

  absl::Status Init() {
    GEMM_RETURN_IF_ERROR(
        CudaStatus(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
    return absl::OkStatus();
  }

  absl::StatusOr<void*> Upload(const std::string& bytes) {
    void* p = nullptr;
    GEMM_RETURN_IF_ERROR(
        CudaStatus(cudaMalloc(&p, std::max<size_t>(bytes.size(), 16)), "cudaMalloc"));
    allocs_.push_back(p);
    GEMM_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy"));
    return p;
  }

  absl::Status EnsureWorkspace(size_t bytes) {
    if (bytes <= workspace_bytes_) return absl::OkStatus();
    if (workspace_ != nullptr) cudaFree(workspace_);
    workspace_ = nullptr;
    workspace_bytes_ = 0;
    GEMM_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&workspace_, bytes), "cudaMalloc(workspace)"));
    workspace_bytes_ = bytes;
    return absl::OkStatus();
  }

  // Runs the case with `kind`; returns the concatenated D bytes of all problems.
  absl::StatusOr<std::string> Run(const std::vector<kernel::Problem>& bound, int64_t batch,
                                  const std::vector<int64_t>& d_bytes, kernel::KernelKind kind,
                                  uint64_t usable_variants) {
    for (size_t i = 0; i < bound.size(); ++i) {
      GEMM_RETURN_IF_ERROR(CudaStatus(cudaMemsetAsync(bound[i].d, 0xFF, d_bytes[i], stream_),
                                      "cudaMemsetAsync"));  // poison (NaN)
    }
    kernel::LaunchOptions opts;
    opts.kind = kind;
    opts.usable_variants = usable_variants;
    absl::Status st;
    if (bound.size() == 1) {
      kernel::StridedBatch sb;
      sb.problem = bound[0];
      sb.batch = batch;
      sb.stride_a = bound[0].m * bound[0].lda;
      sb.stride_b =
          (bound[0].b_layout == kernel::BLayout::kKN ? bound[0].k : bound[0].n) * bound[0].ldb;
      sb.stride_c = bound[0].c != nullptr ? bound[0].m * bound[0].ldc : 0;
      sb.stride_d = bound[0].m * bound[0].ldd;
      GEMM_RETURN_IF_ERROR(EnsureWorkspace(kernel::WorkspaceBytes(sb, kind)));
      opts.workspace = workspace_;
      opts.workspace_bytes = workspace_bytes_;
      st = kernel::Gemm(sb, stream_, opts);
    } else {
      GEMM_RETURN_IF_ERROR(EnsureWorkspace(kernel::WorkspaceBytes(bound, kind)));
      opts.workspace = workspace_;
      opts.workspace_bytes = workspace_bytes_;
      st = kernel::GemmGrouped(bound, stream_, opts);
    }
    GEMM_RETURN_IF_ERROR(st);
    GEMM_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"));
    std::string out;
    for (size_t i = 0; i < bound.size(); ++i) {
      std::string part(d_bytes[i], '\0');
      GEMM_RETURN_IF_ERROR(CudaStatus(
          cudaMemcpy(part.data(), bound[i].d, d_bytes[i], cudaMemcpyDeviceToHost), "cudaMemcpy"));
      out += part;
    }
    return out;
  }

  void* Alloc(size_t bytes, absl::Status* st) {
    void* p = nullptr;
    *st = CudaStatus(cudaMalloc(&p, bytes), "cudaMalloc");
    if (st->ok()) allocs_.push_back(p);
    return p;
  }

 private:
  cudaStream_t stream_ = nullptr;
  std::vector<void*> allocs_;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
};

// One case's operands on the device and on the host.
struct Bound {
  std::vector<kernel::Problem> problems;
  std::vector<int64_t> d_bytes;
  std::vector<std::string> a_host, b_host;
};

absl::StatusOr<Bound> BindOperands(const kernel::QualificationCase& c, Runner& runner,
                                   std::mt19937_64& gen) {
  using kernel::DType;
  Bound out;
  for (const kernel::QualificationProblem& q : c.problems) {
    kernel::Problem p = Shape(q);
    const int64_t batch = c.batch;
    out.a_host.push_back(RandomBytes(batch * p.m * p.k, DType::kBF16, gen));
    out.b_host.push_back(RandomBytes(batch * p.k * p.n, DType::kBF16, gen));
    GEMM_ASSIGN_OR_RETURN(void* a, runner.Upload(out.a_host.back()));
    GEMM_ASSIGN_OR_RETURN(void* b, runner.Upload(out.b_host.back()));
    p.a = a;
    p.b = b;
    if (p.beta != 0.0f) {
      GEMM_ASSIGN_OR_RETURN(void* cc,
                            runner.Upload(RandomBytes(batch * p.m * p.n, p.d_dtype, gen)));
      p.c = cc;
    }
    absl::Status st;
    out.d_bytes.push_back(batch * p.m * p.n * static_cast<int64_t>(kernel::DTypeSize(p.d_dtype)));
    p.d = runner.Alloc(out.d_bytes.back(), &st);
    GEMM_RETURN_IF_ERROR(st);
    out.problems.push_back(p);
  }
  return out;
}

// cuBLASLt against float64 on the CPU, on the case's first problem.
absl::Status CheckCublasLt(const Bound& b, const std::vector<float>& ref, std::string* detail) {
  const kernel::Problem& p = b.problems[0];
  RefProblem rp{p.m, p.n, p.k, p.b_layout == kernel::BLayout::kNK, 1.0, 0.0};
  const std::vector<double> cpu = ReferenceGemm(rp, b.a_host[0], b.b_host[0]);
  const std::vector<float> first(ref.begin(), ref.begin() + p.m * p.n);
  const double err = RelativeError(first, cpu);
  *detail = absl::StrFormat("cublaslt vs float64: relative error %.3g", err);
  if (!(err <= 1e-2)) return absl::DataLossError("cublaslt disagrees with the CPU reference");
  return absl::OkStatus();
}

}  // namespace

absl::Status RunQualificationCase(const kernel::QualificationCase& c, const CaseRunOptions& options,
                                  std::string* detail) {
  using kernel::DType;
  Runner runner;
  GEMM_RETURN_IF_ERROR(runner.Init());
  std::mt19937_64 gen(std::random_device{}());
  GEMM_ASSIGN_OR_RETURN(Bound bound, BindOperands(c, runner, gen));
  const DType out_t = bound.problems[0].d_dtype;
  auto ref = runner.Run(bound.problems, c.batch, bound.d_bytes, kernel::KernelKind::kCublasLt, 0);
  if (!ref.ok()) {
    *detail = absl::StrCat("cublaslt failed: ", ref.status().ToString());
    return ref.status();
  }
  const std::vector<float> ref_f = Decode(*ref, out_t);
  if (options.kind == kernel::KernelKind::kCublasLt) return CheckCublasLt(bound, ref_f, detail);
  uint64_t mask = 0;
  for (int v : c.variants) mask |= uint64_t{1} << v;
  // Only the variants the case is predicted to run: a different choice fails loudly.
  auto got = runner.Run(bound.problems, c.batch, bound.d_bytes, options.kind, mask);
  if (!got.ok()) {
    *detail = absl::StrCat(kernel::KernelName(options.kind), " failed: ", got.status().ToString());
    return got.status();
  }
  std::vector<float> got_f = Decode(*got, out_t);
  if (options.force_mismatch && !got_f.empty()) got_f[0] += 1000.0f;
  const double diff = MaxRelDiff(got_f, ref_f);
  const double tol = out_t == DType::kBF16 ? 2e-2 : 1e-3;
  *detail = absl::StrFormat("max|diff|/max|ref| vs cublaslt = %.3g (tolerance %.1g)%s", diff, tol,
                            options.force_mismatch ? " [mismatch forced by the test hook]" : "");
  if (!(diff <= tol)) return absl::DataLossError("does not match cublaslt");
  return absl::OkStatus();
}

}  // namespace gemm::gpu
