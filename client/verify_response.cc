// gemm_client --verify through cblas_dgemm.
#include "client/verify_response.h"

#include <cblas.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/bf16.h"

namespace gemm::client {
namespace {

std::vector<double> Bf16ToDoubles(absl::string_view bytes) {
  std::vector<float> f(bytes.size() / 2);
  Bf16BytesToFloats(bytes, f.data());
  return std::vector<double>(f.begin(), f.end());
}

}  // namespace

std::vector<double> BlasReferenceGemm(const RefProblem& p, absl::string_view a_bf16,
                                      absl::string_view b_bf16, const std::vector<float>& c) {
  const std::vector<double> a = Bf16ToDoubles(a_bf16.substr(0, 2 * p.m * p.k));
  const std::vector<double> b = Bf16ToDoubles(b_bf16.substr(0, 2 * p.k * p.n));
  std::vector<double> d(p.m * p.n, 0.0);
  const bool add_c = !c.empty();
  if (add_c) std::copy(c.begin(), c.begin() + p.m * p.n, d.begin());
  if (p.m == 0 || p.n == 0) return d;
  // NOTE: with K == 0 BLAS leaves D = beta * C, which is the product's definition too.
  cblas_dgemm(CblasRowMajor, CblasNoTrans, p.b_nk ? CblasTrans : CblasNoTrans, p.m, p.n, p.k,
              p.alpha, a.data(), std::max<int64_t>(1, p.k), b.data(),
              std::max<int64_t>(1, p.b_nk ? p.k : p.n), add_c ? p.beta : 0.0, d.data(), p.n);
  return d;
}

absl::StatusOr<double> WorstRelativeError(const std::vector<ProblemOperands>& problems,
                                          const VerifyOptions& options,
                                          const v1::GemmResponse& response) {
  if (response.outputs_size() != static_cast<int>(problems.size())) {
    return absl::InternalError(
        absl::StrCat("expected ", problems.size(), " outputs, got ", response.outputs_size()));
  }
  const int64_t out_bytes = options.out_fp32 ? 4 : 2;
  double worst = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    const ProblemOperands& op = problems[i];
    const std::vector<float> out = DecodeOutput(response.outputs(i).data(), options.out_fp32);
    const int64_t mn = op.m * op.n, mk = op.m * op.k, kn = op.k * op.n;
    if (static_cast<int64_t>(out.size()) != op.count * mn) {
      return absl::InternalError(
          absl::StrCat("output ", i, " holds ", out.size(), " values, expected ", op.count * mn));
    }
    for (int64_t b = 0; b < op.count; ++b) {
      std::vector<float> c;
      if (!op.c.empty()) {
        c = DecodeOutput(absl::string_view(op.c).substr(b * mn * out_bytes, mn * out_bytes),
                         options.out_fp32);
      }
      const std::vector<double> ref = BlasReferenceGemm(
          {op.m, op.n, op.k, options.b_nk, options.alpha, options.beta},
          absl::string_view(op.a).substr(b * mk * 2, mk * 2),
          absl::string_view(op.b).substr(op.b_shared ? 0 : b * kn * 2, kn * 2), c);
      const std::vector<float> got(out.begin() + b * mn, out.begin() + (b + 1) * mn);
      worst = std::max(worst, RelativeError(got, ref));
    }
  }
  return worst;
}

}  // namespace gemm::client
