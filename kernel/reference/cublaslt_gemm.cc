// cuBLASLt path: row-major problems mapped onto column-major cuBLASLt by computing
// D^T[N,M] = op(B)^T[N,K] * A^T[K,M]; a row-major [R,C] matrix with pitch ld is a column-major
// [C,R] matrix with the same ld, so no data moves.
#include "reference/cublaslt_gemm.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "cuda_status.h"

namespace gemm::kernel::reference {
namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;  // NVIDIA's advice for Hopper.
constexpr std::size_t kMaxCachedPlans = 4096;

// Largest power of two (<= 256) dividing the address and every batch step of one operand.
int Alignment(const void* p, int64_t stride_elems, std::size_t elem, int64_t batch) {
  uint64_t v = reinterpret_cast<uintptr_t>(p) | 256;
  if (batch > 1) v |= static_cast<uint64_t>(stride_elems) * elem;
  return static_cast<int>(v & (~v + 1));
}

using PlanKey =
    std::tuple<int, int64_t, int64_t, int64_t, int, int, int64_t, int64_t, int64_t, int64_t,
               int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int, std::size_t>;

// Descriptors and algorithm of one cached problem class. Immutable once built.
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// Process-wide cache of handles (one per device) and plans.
class Cache {
 public:
  static Cache& Get() {
    static Cache* cache = new Cache();  // never destroyed: used until process exit
    return *cache;
  }

  absl::StatusOr<cublasLtHandle_t> Handle(int device) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = handles_.find(device);
    if (it != handles_.end()) return it->second;
    cublasLtHandle_t h = nullptr;
    GEMM_RETURN_IF_ERROR(CublasStatus(cublasLtCreate(&h), "cublasLtCreate"));
    handles_[device] = h;
    return h;
  }

  std::shared_ptr<const Plan> Find(const PlanKey& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    return it == plans_.end() ? nullptr : it->second;
  }

  void Insert(const PlanKey& key, std::shared_ptr<const Plan> plan) {
    std::lock_guard<std::mutex> lock(mu_);
    if (plans_.size() >= kMaxCachedPlans) plans_.clear();
    plans_.emplace(key, std::move(plan));
  }

 private:
  std::mutex mu_;
  std::map<int, cublasLtHandle_t> handles_;
  std::map<PlanKey, std::shared_ptr<const Plan>> plans_;
};

absl::Status SetLayoutBatch(cublasLtMatrixLayout_t layout, int64_t batch, int64_t stride) {
  if (batch <= 1) return absl::OkStatus();
  int32_t count = static_cast<int32_t>(batch);
  GEMM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                    &count, sizeof(count)),
                   "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)"));
  return CublasStatus(
      cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                       sizeof(stride)),
      "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
}

absl::StatusOr<std::shared_ptr<const Plan>> BuildPlan(cublasLtHandle_t handle,
                                                      const StridedBatch& args, int align_a,
                                                      int align_b, int align_c, int align_d,
                                                      std::size_t workspace_bytes) {
  const Problem& p = args.problem;
  auto plan = std::make_shared<Plan>();
  const cudaDataType_t d_type = p.d_dtype == DType::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
  GEMM_RETURN_IF_ERROR(CublasStatus(
      cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate"));
  // First cuBLASLt operand: op(B)^T as a column-major [N,K] matrix.
  const cublasOperation_t trans_b = p.b_layout == BLayout::kKN ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t trans_a = CUBLAS_OP_N;
  GEMM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_b,
                                                  sizeof(trans_b)),
                   "MatmulDescSetAttribute(TRANSA)"));
  GEMM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_a,
                                                  sizeof(trans_a)),
                   "MatmulDescSetAttribute(TRANSB)"));
  const uint64_t m = p.m, n = p.n, k = p.k;
  if (p.b_layout == BLayout::kKN) {
    GEMM_RETURN_IF_ERROR(CublasStatus(
        cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, n, k, p.ldb), "MatrixLayoutCreate(B)"));
  } else {
    GEMM_RETURN_IF_ERROR(CublasStatus(
        cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, k, n, p.ldb), "MatrixLayoutCreate(B)"));
  }
  GEMM_RETURN_IF_ERROR(CublasStatus(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, k, m, p.lda),
                                    "MatrixLayoutCreate(A)"));
  const int64_t ldc = (p.beta != 0.0f && p.c != nullptr) ? p.ldc : p.ldd;
  GEMM_RETURN_IF_ERROR(CublasStatus(cublasLtMatrixLayoutCreate(&plan->c, d_type, n, m, ldc),
                                    "MatrixLayoutCreate(C)"));
  GEMM_RETURN_IF_ERROR(CublasStatus(cublasLtMatrixLayoutCreate(&plan->d, d_type, n, m, p.ldd),
                                    "MatrixLayoutCreate(D)"));
  const int64_t stride_c = (p.beta != 0.0f && p.c != nullptr) ? args.stride_c : args.stride_d;
  GEMM_RETURN_IF_ERROR(SetLayoutBatch(plan->a, args.batch, args.stride_a));
  GEMM_RETURN_IF_ERROR(SetLayoutBatch(plan->b, args.batch, args.stride_b));
  GEMM_RETURN_IF_ERROR(SetLayoutBatch(plan->c, args.batch, stride_c));
  GEMM_RETURN_IF_ERROR(SetLayoutBatch(plan->d, args.batch, args.stride_d));

  cublasLtMatmulPreference_t pref = nullptr;
  GEMM_RETURN_IF_ERROR(CublasStatus(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate"));
  std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>,
                  decltype(&cublasLtMatmulPreferenceDestroy)>
      pref_guard(pref, &cublasLtMatmulPreferenceDestroy);
  const uint64_t ws = workspace_bytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                       sizeof(ws));
  // Operand names in cuBLASLt's frame: its A is our B and its B is our A.
  const uint32_t al_a = align_b, al_b = align_a, al_c = align_c, al_d = align_d;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a,
                                       sizeof(al_a));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b,
                                       sizeof(al_b));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c,
                                       sizeof(al_c));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d,
                                       sizeof(al_d));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  GEMM_RETURN_IF_ERROR(
      CublasStatus(cublasLtMatmulAlgoGetHeuristic(handle, plan->op, plan->b, plan->a, plan->c,
                                                  plan->d, pref, 1, &result, &found),
                   "cublasLtMatmulAlgoGetHeuristic"));
  if (found == 0) {
    return absl::InternalError(absl::StrCat("cuBLASLt has no algorithm for M=", p.m, " N=", p.n,
                                            " K=", p.k, " batch=", args.batch));
  }
  plan->algo = result.algo;
  return std::shared_ptr<const Plan>(std::move(plan));
}

}  // namespace

std::size_t CublasLtWorkspaceBytes() { return kWorkspaceBytes; }

absl::Status CublasLtGemm(const StridedBatch& args, cudaStream_t stream, void* workspace,
                          std::size_t workspace_bytes) {
  const Problem& p = args.problem;
  if (workspace == nullptr) workspace_bytes = 0;
  int device = 0;
  GEMM_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  GEMM_ASSIGN_OR_RETURN(const cublasLtHandle_t handle, Cache::Get().Handle(device));

  const std::size_t d_size = DTypeSize(p.d_dtype);
  const bool use_c = p.beta != 0.0f && p.c != nullptr;
  const int align_a = Alignment(p.a, args.stride_a, 2, args.batch);
  const int align_b = Alignment(p.b, args.stride_b, 2, args.batch);
  const int align_c = use_c ? Alignment(p.c, args.stride_c, d_size, args.batch)
                            : Alignment(p.d, args.stride_d, d_size, args.batch);
  const int align_d = Alignment(p.d, args.stride_d, d_size, args.batch);
  const int64_t batch = std::max<int64_t>(args.batch, 1);
  const PlanKey key{device,
                    p.m,
                    p.n,
                    p.k,
                    static_cast<int>(p.b_layout),
                    static_cast<int>(p.d_dtype),
                    p.lda,
                    p.ldb,
                    use_c ? p.ldc : p.ldd,
                    p.ldd,
                    batch,
                    args.stride_a,
                    args.stride_b,
                    use_c ? args.stride_c : args.stride_d,
                    args.stride_d,
                    align_a,
                    align_b,
                    align_c,
                    align_d,
                    workspace_bytes};
  std::shared_ptr<const Plan> plan = Cache::Get().Find(key);
  if (plan == nullptr) {
    StridedBatch normalized = args;
    normalized.batch = batch;
    GEMM_ASSIGN_OR_RETURN(
        plan, BuildPlan(handle, normalized, align_a, align_b, align_c, align_d, workspace_bytes));
    Cache::Get().Insert(key, plan);
  }
  const float alpha = p.alpha;
  const float beta = use_c ? p.beta : 0.0f;
  const void* c = use_c ? p.c : p.d;
  return CublasStatus(
      cublasLtMatmul(handle, plan->op, &alpha, p.b, plan->b, p.a, plan->a, &beta, c, plan->c, p.d,
                     plan->d, &plan->algo, workspace, workspace_bytes, stream),
      "cublasLtMatmul");
}

}  // namespace gemm::kernel::reference
