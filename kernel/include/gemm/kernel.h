// Public API of the gemm kernel library: problem description, kernel selection and the entry
// points `Gemm()` (or its two halves, `Prepare()` and `Launch()`) and `GemmGrouped()`. Knows
// nothing of gRPC or protobuf. All pointers are device pointers.
//
//   D[M,N] = alpha * A[M,K] · op(B) + beta * C[M,N]      (FP32 accumulate)
//
// A is row-major [M,K] BF16. B is BF16, either row-major [K,N] (numpy `a @ b`, BLayout::kKN) or
// row-major [N,K] (a PyTorch Linear weight, BLayout::kNK). C (optional) and D share D's dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

typedef struct CUstream_st* cudaStream_t;  // same typedef as the CUDA runtime's; no CUDA include.

namespace gemm::kernel {

enum class DType : int { kBF16 = 0, kFP32 = 1 };
enum class BLayout : int { kKN = 0, kNK = 1 };

// Size in bytes of one element of `t`.
inline constexpr std::size_t DTypeSize(DType t) { return t == DType::kBF16 ? 2 : 4; }

// One GEMM. Leading dimensions are in elements; each row pitch (ld * element size) must be a
// multiple of 16 bytes (TMA requirement), base pointers 16-byte aligned.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;  // BF16 [M,K], row pitch lda
  int64_t lda = 0;
  const void* b = nullptr;  // BF16 [K,N] (kKN, pitch ldb >= N) or [N,K] (kNK, pitch ldb >= K)
  int64_t ldb = 0;
  BLayout b_layout = BLayout::kKN;
  const void* c = nullptr;  // optional, d_dtype [M,N], pitch ldc; read only when beta != 0
  int64_t ldc = 0;
  void* d = nullptr;  // d_dtype [M,N], pitch ldd
  int64_t ldd = 0;
  DType d_dtype = DType::kBF16;
  float alpha = 1.0f;
  float beta = 0.0f;
};

// Equal-shape batch: problem i uses base pointers advanced by i * stride (elements).
struct StridedBatch {
  Problem problem;  // shape, layouts, scalars and the pointers of batch entry 0
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;
};

// Which implementation runs a call.
enum class KernelKind : int {
  kAuto = 0,      // the best one for the device (dispatch on exact compute capability)
  kSm90 = 1,      // persistent WGMMA kernel (compute capability 9.0, sm_90a)
  kSm100 = 2,     // 2-SM tcgen05 kernel (compute capability 10.0, sm_100a)
  kCublasLt = 3,  // cuBLASLt: reference and fallback
};

// Human-readable name, e.g. "sm90_wgmma".
std::string KernelName(KernelKind kind);

// Options of one call.
struct LaunchOptions {
  KernelKind kind = KernelKind::kAuto;
  // Device scratch for split-K partials and grouped-problem descriptors; may be null when
  // WorkspaceBytes() returned 0. Must stay valid until the work on `stream` completes. A call
  // may enqueue several kernels that pass data through it (the small-M path's fixup): another
  // call may reuse the same workspace on the same stream only when enqueued after this call
  // returned, never from another thread in between.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  // Native variants this call may run: bit i is variant i of the device's kernel family
  // (NativeVariantNames in gemm/qualification.h). A call whose variant is not in the set is
  // served by cuBLASLt when kind is kAuto and fails with UNIMPLEMENTED otherwise. The server
  // passes the variants that passed qualification. Default: every variant.
  uint64_t usable_variants = ~uint64_t{0};
  // Where set, receives the kernel that served the call: the resolved native kind, or kCublasLt
  // when kAuto fell back to it. Default: not reported. For a prepared call (Prepare) it is
  // written by Prepare and, where the fallback is decided at launch (the SM100 kernel), by
  // Launch: it must stay valid until Launch returns.
  KernelKind* served = nullptr;
};

// The kernel that kAuto picks for `device` (exact compute capability), or an error when the
// device cannot be queried. Never returns kAuto.
absl::StatusOr<KernelKind> SelectKernel(int device);

// Workspace a call needs, in bytes (0 when none).
std::size_t WorkspaceBytes(const StridedBatch& args, KernelKind kind);
std::size_t WorkspaceBytes(std::span<const Problem> group, KernelKind kind);

// Enqueues the strided batch on `stream` (never the legacy default stream in the server):
// Prepare, then Launch. Validates shapes, pitches and alignment (INVALID_ARGUMENT), reports CUDA
// errors as INTERNAL and an unusable kernel for this device as FAILED_PRECONDITION. Does not
// synchronize.
absl::Status Gemm(const StridedBatch& args, cudaStream_t stream, const LaunchOptions& opts = {});

// A strided batch whose host work is done ahead of its launch: validation, the kernel's choice and,
// for the SM90 persistent kernel, its configuration, TMA descriptors and split plan, so that
// Launch only enqueues it. The SM90 small-M path, the SM100 kernel and cuBLASLt keep their host
// work in Launch. Move-only; made by Prepare.
class PreparedGemm {
 public:
  ~PreparedGemm();
  PreparedGemm(PreparedGemm&&) noexcept;
  PreparedGemm& operator=(PreparedGemm&&) noexcept;

  // The kernel that serves the call as far as Prepare decided it (see LaunchOptions::served).
  KernelKind served() const { return served_; }

 private:
  friend absl::StatusOr<PreparedGemm> Prepare(const StridedBatch& args, const LaunchOptions& opts);
  friend absl::Status Launch(const PreparedGemm& call, cudaStream_t stream);
  struct Native;  // the SM90 persistent kernel's planned launch

  PreparedGemm();

  StridedBatch args_;
  LaunchOptions opts_;
  KernelKind served_ = KernelKind::kCublasLt;
  bool small_m_ = false;  // SM90: the small-M kernel serves it
  std::unique_ptr<Native> native_;
};

// Does the host work of Gemm(args, ·, opts) on the current device without enqueueing anything,
// with the same errors. opts.workspace must be the one the launch will use.
absl::StatusOr<PreparedGemm> Prepare(const StridedBatch& args, const LaunchOptions& opts = {});

// Enqueues a prepared call on `stream` (of the device it was prepared on), once its operands are
// ready in stream order. A prepared call may be launched more than once, each launch after the
// previous one has left the workspace (the rule of LaunchOptions::workspace).
absl::Status Launch(const PreparedGemm& call, cudaStream_t stream);

// Enqueues a group of problems of different shapes as one persistent launch where the kernel
// supports it. All problems must share d_dtype and b_layout.
absl::Status GemmGrouped(std::span<const Problem> group, cudaStream_t stream,
                         const LaunchOptions& opts = {});

}  // namespace gemm::kernel
