// Argument validation for Gemm() / GemmGrouped().
#include "validate.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace gemm::kernel {
namespace {

bool Aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

std::string Shape(const Problem& p) {
  return absl::StrCat(" (M=", p.m, " N=", p.n, " K=", p.k, ")");
}

}  // namespace

absl::Status ValidateProblem(const Problem& p) {
  if (p.m < 1 || p.n < 1 || p.k < 1) {
    return absl::InvalidArgumentError(absl::StrCat("M, N and K must be >= 1", Shape(p)));
  }
  constexpr int64_t kMaxDim = int64_t{1} << 31;  // TMA and cuBLASLt take 32-bit extents
  if (p.m >= kMaxDim || p.n >= kMaxDim || p.k >= kMaxDim) {
    return absl::InvalidArgumentError(absl::StrCat("M, N and K must be < 2^31", Shape(p)));
  }
  if (p.d_dtype != DType::kBF16 && p.d_dtype != DType::kFP32) {
    return absl::InvalidArgumentError("d_dtype must be kBF16 or kFP32");
  }
  if (p.b_layout != BLayout::kKN && p.b_layout != BLayout::kNK) {
    return absl::InvalidArgumentError("b_layout must be kKN or kNK");
  }
  if (p.a == nullptr || p.b == nullptr || p.d == nullptr) {
    return absl::InvalidArgumentError("A, B and D pointers must be non-null");
  }
  if (p.beta != 0.0f && p.c == nullptr) {
    return absl::InvalidArgumentError("beta != 0 needs a C pointer");
  }
  if (p.lda < p.k) {
    return absl::InvalidArgumentError(absl::StrCat("lda=", p.lda, " must be >= K", Shape(p)));
  }
  const int64_t b_cols = p.b_layout == BLayout::kKN ? p.n : p.k;
  if (p.ldb < b_cols) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ldb=", p.ldb, " must be >= ", p.b_layout == BLayout::kKN ? "N" : "K", Shape(p)));
  }
  if (p.ldd < p.n) {
    return absl::InvalidArgumentError(absl::StrCat("ldd=", p.ldd, " must be >= N", Shape(p)));
  }
  if (p.beta != 0.0f && p.ldc < p.n) {
    return absl::InvalidArgumentError(absl::StrCat("ldc=", p.ldc, " must be >= N", Shape(p)));
  }
  const std::size_t d_size = DTypeSize(p.d_dtype);
  if (!Aligned(p.a, 2) || !Aligned(p.b, 2) || !Aligned(p.d, d_size) ||
      (p.beta != 0.0f && !Aligned(p.c, d_size))) {
    return absl::InvalidArgumentError("pointers must be aligned to their element size");
  }
  return absl::OkStatus();
}

absl::Status ValidateBatch(const StridedBatch& args) {
  if (args.batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat("batch=", args.batch, " must be >= 1"));
  }
  if (args.batch >= (int64_t{1} << 31)) {
    return absl::InvalidArgumentError("batch must be < 2^31");
  }
  if (args.batch > 1 &&
      (args.stride_a < 0 || args.stride_b < 0 || args.stride_c < 0 || args.stride_d < 0)) {
    return absl::InvalidArgumentError("batch strides must be >= 0");
  }
  const Problem& p = args.problem;
  if (args.batch > 1 && args.stride_d < (p.m - 1) * p.ldd + p.n) {
    return absl::InvalidArgumentError(
        absl::StrCat("stride_d=", args.stride_d,
                     " makes the batch entries of D overlap (needs >= (M-1)*ldd+N)"));
  }
  return ValidateProblem(args.problem);
}

absl::Status ValidateGroup(std::span<const Problem> group) {
  for (std::size_t i = 0; i < group.size(); ++i) {
    absl::Status st = ValidateProblem(group[i]);
    if (!st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("group[", i, "]: ", st.message()));
    }
    if (group[i].d_dtype != group[0].d_dtype || group[i].b_layout != group[0].b_layout) {
      return absl::InvalidArgumentError(
          absl::StrCat("group[", i, "]: all problems must share d_dtype and b_layout"));
    }
  }
  return absl::OkStatus();
}

bool TmaCompatible(const Problem& p) {
  const std::size_t d_size = DTypeSize(p.d_dtype);
  const bool use_c = p.beta != 0.0f;
  return Aligned(p.a, 16) && Aligned(p.b, 16) && Aligned(p.d, 16) && (!use_c || Aligned(p.c, 16)) &&
         (p.lda * 2) % 16 == 0 && (p.ldb * 2) % 16 == 0 && (p.ldd * d_size) % 16 == 0 &&
         (!use_c || (p.ldc * d_size) % 16 == 0);
}

bool TmaCompatible(const StridedBatch& args) {
  if (!TmaCompatible(args.problem)) return false;
  if (args.batch <= 1) return true;
  const std::size_t d_size = DTypeSize(args.problem.d_dtype);
  const bool use_c = args.problem.beta != 0.0f;
  return (args.stride_a * 2) % 16 == 0 && (args.stride_b * 2) % 16 == 0 &&
         (args.stride_d * d_size) % 16 == 0 && (!use_c || (args.stride_c * d_size) % 16 == 0);
}

}  // namespace gemm::kernel
