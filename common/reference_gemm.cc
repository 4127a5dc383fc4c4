// Float64 reference GEMM and error metric.
#include "common/reference_gemm.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "common/bf16.h"

namespace gemm {

std::vector<double> ReferenceGemm(const RefProblem& p, absl::string_view a_bf16,
                                  absl::string_view b_bf16, const std::vector<float>& c) {
  std::vector<float> a(p.m * p.k), b(p.k * p.n);
  Bf16BytesToFloats(a_bf16, a.data());
  Bf16BytesToFloats(b_bf16, b.data());
  std::vector<double> d(p.m * p.n, 0.0);
  for (int64_t i = 0; i < p.m; ++i) {
    double* row = &d[i * p.n];
    for (int64_t kk = 0; kk < p.k; ++kk) {
      const double av = a[i * p.k + kk];
      if (!p.b_nk) {
        const float* brow = &b[kk * p.n];
        for (int64_t j = 0; j < p.n; ++j) row[j] += av * brow[j];
      } else {
        for (int64_t j = 0; j < p.n; ++j) row[j] += av * b[j * p.k + kk];
      }
    }
    for (int64_t j = 0; j < p.n; ++j) {
      row[j] *= p.alpha;
      if (!c.empty()) row[j] += p.beta * c[i * p.n + j];
    }
  }
  return d;
}

double RelativeError(const std::vector<float>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i]) && std::isfinite(ref[i])) {
      return std::numeric_limits<double>::infinity();
    }
    const double diff = out[i] - ref[i];
    num += diff * diff;
    den += ref[i] * ref[i];
  }
  if (std::isnan(num)) return std::numeric_limits<double>::infinity();
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::vector<float> DecodeOutput(absl::string_view bytes, bool fp32) {
  if (fp32) {
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
  }
  std::vector<float> out(bytes.size() / 2);
  Bf16BytesToFloats(bytes, out.data());
  return out;
}

std::string RandomBf16Bytes(int64_t count, absl::BitGenRef gen) {
  std::vector<float> v(count);
  for (auto& x : v) x = absl::Uniform<float>(gen, -1.0f, 1.0f);
  return FloatsToBf16Bytes(v);
}

}  // namespace gemm
