// Start-up self-test of a device's kernel against cuBLASLt (see self_test.h).
#include "server/gpu/self_test.h"

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
#include "server/gpu/cuda_util.h"

namespace gemm::gpu {
namespace {

struct Case {
  const char* name;
  std::vector<kernel::Problem> problems;  // pointers unset; grouped when > 1
  int64_t batch = 1;                      // strided batch count (problems.size() == 1)
};

kernel::Problem Shape(int64_t m, int64_t n, int64_t k, kernel::BLayout layout,
                      kernel::DType out = kernel::DType::kBF16, float alpha = 1.0f,
                      float beta = 0.0f) {
  kernel::Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.b_layout = layout;
  p.d_dtype = out;
  p.alpha = alpha;
  p.beta = beta;
  p.lda = k;
  p.ldb = layout == kernel::BLayout::kKN ? n : k;
  p.ldc = p.ldd = n;
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
    GPU_RETURN_IF_ERROR(
        CudaStatus(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
    return absl::OkStatus();
  }

  absl::StatusOr<void*> Upload(const std::string& bytes) {
    void* p = nullptr;
    GPU_RETURN_IF_ERROR(
        CudaStatus(cudaMalloc(&p, std::max<size_t>(bytes.size(), 16)), "cudaMalloc"));
    allocs_.push_back(p);
    GPU_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpy(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "cudaMemcpy"));
    return p;
  }

  absl::Status EnsureWorkspace(size_t bytes) {
    if (bytes <= workspace_bytes_) return absl::OkStatus();
    if (workspace_ != nullptr) cudaFree(workspace_);
    workspace_ = nullptr;
    workspace_bytes_ = 0;
    GPU_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&workspace_, bytes), "cudaMalloc(workspace)"));
    workspace_bytes_ = bytes;
    return absl::OkStatus();
  }

  // Runs the case with `kind`; returns the concatenated D bytes of all problems.
  absl::StatusOr<std::string> Run(const Case& c, const std::vector<kernel::Problem>& bound,
                                  int64_t batch, const std::vector<int64_t>& d_bytes,
                                  kernel::KernelKind kind) {
    for (size_t i = 0; i < bound.size(); ++i) {
      GPU_RETURN_IF_ERROR(CudaStatus(cudaMemsetAsync(bound[i].d, 0xFF, d_bytes[i], stream_),
                                     "cudaMemsetAsync"));  // poison (NaN)
    }
    kernel::LaunchOptions opts;
    opts.kind = kind;
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
      GPU_RETURN_IF_ERROR(EnsureWorkspace(kernel::WorkspaceBytes(sb, kind)));
      opts.workspace = workspace_;
      opts.workspace_bytes = workspace_bytes_;
      st = kernel::Gemm(sb, stream_, opts);
    } else {
      GPU_RETURN_IF_ERROR(EnsureWorkspace(kernel::WorkspaceBytes(bound, kind)));
      opts.workspace = workspace_;
      opts.workspace_bytes = workspace_bytes_;
      st = kernel::GemmGrouped(bound, stream_, opts);
    }
    GPU_RETURN_IF_ERROR(st);
    GPU_RETURN_IF_ERROR(CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"));
    std::string out;
    for (size_t i = 0; i < bound.size(); ++i) {
      std::string part(d_bytes[i], '\0');
      GPU_RETURN_IF_ERROR(CudaStatus(
          cudaMemcpy(part.data(), bound[i].d, d_bytes[i], cudaMemcpyDeviceToHost), "cudaMemcpy"));
      out += part;
    }
    (void)c;
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

}  // namespace

absl::Status SelfTest(int device, kernel::KernelKind kind, const SelfTestOptions& options,
                      std::string* detail) {
  using kernel::BLayout;
  using kernel::DType;
  const std::string name = kernel::KernelName(kind);
  auto finish = [&](absl::Status st, const std::string& text) {
    *detail = text;
    return st;
  };
  GPU_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
  Runner runner;
  GPU_RETURN_IF_ERROR(runner.Init());
  std::mt19937_64 gen(std::random_device{}());

  std::vector<Case> cases = {
      {"256x256x256 kn bf16", {Shape(256, 256, 256, BLayout::kKN)}},
      {"16x4096x4096 nk bf16 (decode)", {Shape(16, 4096, 4096, BLayout::kNK)}},
      // SM90: the 64-row WGMMA decode tile (M 17..64) with the tail split-K.
      {"48x4096x4096 kn bf16 (decode, WGMMA)", {Shape(48, 4096, 4096, BLayout::kKN)}},
      {"1000x520x136 kn fp32 alpha=0.5 beta=1",
       {Shape(1000, 520, 136, BLayout::kKN, DType::kFP32, 0.5f, 1.0f)}},
      {"3x 320x1024x1024 nk bf16 (strided)", {Shape(320, 1024, 1024, BLayout::kNK)}, 3},
      {"2048x2048x2048 kn bf16", {Shape(2048, 2048, 2048, BLayout::kKN)}},
      // Reaches the SM90 tail split-K (32 tiles of 128x128 on 132 SMs, K cut in 4).
      {"128x4096x4096 nk bf16 (split-K tail)", {Shape(128, 4096, 4096, BLayout::kNK)}},
      // Large shapes take other kernel variants (SM100: 2 M-waves per CTA from K >= 2048 and
      // enough tiles, kernel/src/sm100/sm100_config.h ChooseMWaves): cover both B layouts.
      {"4096x4096x4096 nk bf16 (large)", {Shape(4096, 4096, 4096, BLayout::kNK)}},
      {"4096x4096x4096 kn bf16 (large)", {Shape(4096, 4096, 4096, BLayout::kKN)}},
      {"group 128x256x512, 64x128x256, 300x200x104 nk bf16",
       {Shape(128, 256, 512, BLayout::kNK), Shape(64, 128, 256, BLayout::kNK),
        Shape(300, 200, 104, BLayout::kNK)}},
  };

  double worst = 0;
  int passed = 0, unimplemented = 0;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    Case& c = cases[ci];
    std::vector<kernel::Problem> bound = c.problems;
    std::vector<int64_t> d_bytes;
    std::vector<std::string> a_host, b_host;
    for (kernel::Problem& p : bound) {
      const int64_t batch = c.batch;
      const int64_t es = kernel::DTypeSize(p.d_dtype);
      a_host.push_back(RandomBytes(batch * p.m * p.k, DType::kBF16, gen));
      b_host.push_back(RandomBytes(batch * p.k * p.n, DType::kBF16, gen));
      auto a = runner.Upload(a_host.back());
      if (!a.ok()) return finish(a.status(), "self-test could not allocate");
      auto b = runner.Upload(b_host.back());
      if (!b.ok()) return finish(b.status(), "self-test could not allocate");
      p.a = *a;
      p.b = *b;
      if (p.beta != 0.0f) {
        auto cc = runner.Upload(RandomBytes(batch * p.m * p.n, p.d_dtype, gen));
        if (!cc.ok()) return finish(cc.status(), "self-test could not allocate");
        p.c = *cc;
      }
      absl::Status st;
      d_bytes.push_back(batch * p.m * p.n * es);
      p.d = runner.Alloc(d_bytes.back(), &st);
      if (!st.ok()) return finish(st, "self-test could not allocate");
    }
    const DType out_t = bound[0].d_dtype;
    auto ref = runner.Run(c, bound, c.batch, d_bytes, kernel::KernelKind::kCublasLt);
    if (!ref.ok()) {
      return finish(ref.status(),
                    absl::StrCat("cublaslt failed on ", c.name, ": ", ref.status().ToString()));
    }
    const std::vector<float> ref_f = Decode(*ref, out_t);
    if (ci == 0) {  // cuBLASLt itself against float64 on the CPU
      RefProblem rp{bound[0].m, bound[0].n, bound[0].k, bound[0].b_layout == BLayout::kNK,
                    1.0,        0.0};
      std::vector<double> cpu = ReferenceGemm(rp, a_host[0], b_host[0]);
      const double err = RelativeError(ref_f, cpu);
      if (!(err <= 1e-2)) {
        return finish(
            absl::InternalError("cublaslt disagrees with the CPU reference"),
            absl::StrFormat("cublaslt vs float64 on %s: relative error %.3g", c.name, err));
      }
    }
    if (kind == kernel::KernelKind::kCublasLt) {
      ++passed;
      continue;
    }
    auto got = runner.Run(c, bound, c.batch, d_bytes, kind);
    if (absl::IsUnimplemented(got.status())) {
      ++unimplemented;
      continue;
    }
    if (!got.ok()) {
      return finish(got.status(),
                    absl::StrCat(name, " failed on ", c.name, ": ", got.status().ToString()));
    }
    std::vector<float> got_f = Decode(*got, out_t);
    if (options.force_mismatch && ci == 0 && !got_f.empty()) got_f[0] += 1000.0f;
    const double diff = MaxRelDiff(got_f, ref_f);
    const double tol = out_t == DType::kBF16 ? 2e-2 : 1e-3;
    if (!(diff <= tol)) {
      return finish(absl::InternalError(absl::StrCat(name, " does not match cublaslt")),
                    absl::StrFormat("%s MISMATCH vs cublaslt on %s: max|diff|/max|ref| = %.3g "
                                    "(tolerance %.1g)%s",
                                    name, c.name, diff, tol,
                                    options.force_mismatch ? " [forced by the test hook]" : ""));
    }
    worst = std::max(worst, diff);
    ++passed;
  }
  if (kind == kernel::KernelKind::kCublasLt) {
    return finish(
        absl::OkStatus(),
        absl::StrFormat("cublaslt ran %d problems and matches float64 on the CPU", passed));
  }
  if (passed == 0) {
    return finish(absl::UnimplementedError(absl::StrCat(name, " is not implemented")),
                  absl::StrCat(name, ": not implemented for any self-test problem"));
  }
  return finish(absl::OkStatus(),
                absl::StrFormat(
                    "%s matches cublaslt on %d problems (worst max|diff|/max|ref| "
                    "%.2g)%s",
                    name, passed, worst,
                    unimplemented > 0
                        ? absl::StrCat("; ", unimplemented, " not implemented (served by cublaslt)")
                        : std::string()));
}

}  // namespace gemm::gpu
