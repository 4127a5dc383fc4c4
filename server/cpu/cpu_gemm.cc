// CPU GEMM through cblas_sgemm.
#include "server/cpu/cpu_gemm.h"

#include <cblas.h>

#include <cstring>
#include <vector>

#include "common/bf16.h"

namespace gemm::cpu {

void DecodeBf16(absl::string_view bytes, float* out) { Bf16BytesToFloats(bytes, out); }

void CpuGemm(const core::Problem& p, int64_t index, const float* b_float, char* out) {
  const int64_t mk = p.m * p.k, mn = p.m * p.n;
  std::vector<float> a(mk), d(mn, 0.0f);
  DecodeBf16(p.a.substr(index * mk * 2, mk * 2), a.data());
  float beta = 0.0f;
  if (!p.c.empty()) {
    const int64_t cb = core::DTypeBytes(p.out_dtype);
    absl::string_view c = p.c.substr(index * mn * cb, mn * cb);
    if (p.out_dtype == core::DType::kFP32) {
      std::memcpy(d.data(), c.data(), mn * 4);
    } else {
      DecodeBf16(c, d.data());
    }
    beta = p.beta;
  }
  const bool nk = p.b_layout == core::BLayout::kNK;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, nk ? CblasTrans : CblasNoTrans, p.m, p.n, p.k, p.alpha,
              a.data(), p.k, b_float, nk ? p.k : p.n, beta, d.data(), p.n);
  if (p.out_dtype == core::DType::kFP32) {
    std::memcpy(out, d.data(), mn * 4);
  } else {
    auto* o = reinterpret_cast<unsigned char*>(out);
    for (int64_t i = 0; i < mn; ++i) {
      const uint16_t h = FloatToBf16(d[i]);
      o[2 * i] = static_cast<unsigned char>(h & 0xff);
      o[2 * i + 1] = static_cast<unsigned char>(h >> 8);
    }
  }
}

}  // namespace gemm::cpu
