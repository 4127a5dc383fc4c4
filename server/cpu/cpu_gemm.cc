// CPU GEMM through cblas_sgemm; operand bytes are read and written under RunGuarded().
#include "server/cpu/cpu_gemm.h"

#include <cblas.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/bf16.h"
#include "common/guarded_copy.h"

namespace gemm::cpu {
namespace {

// Writes the M*N floats `d` to `out` as `dtype`. False when a page of `out` vanished.
bool Store(const std::vector<float>& d, core::DType dtype, char* out) {
  if (dtype == core::DType::kFP32) return GuardedCopy(out, d.data(), d.size() * 4);
  auto* o = reinterpret_cast<unsigned char*>(out);
  return RunGuarded([&] {
    for (size_t i = 0; i < d.size(); ++i) {
      const uint16_t h = FloatToBf16(d[i]);
      o[2 * i] = static_cast<unsigned char>(h & 0xff);
      o[2 * i + 1] = static_cast<unsigned char>(h >> 8);
    }
  });
}

}  // namespace

bool DecodeBf16(absl::string_view bytes, float* out) {
  return RunGuarded([&] { Bf16BytesToFloats(bytes, out); });
}

std::optional<Operand> CpuGemm(const core::Problem& p, int64_t index, const float* b_float,
                               char* out) {
  const int64_t mk = p.m * p.k, mn = p.m * p.n;
  std::vector<float> a(mk), d(mn, 0.0f);
  std::string scratch;  // an operand's bytes when they arrived in pieces
  if (!DecodeBf16(p.a.Range(index * mk * 2, mk * 2, &scratch), a.data())) return Operand::kA;
  float beta = 0.0f;
  if (!p.c.empty()) {
    const int64_t cb = core::DTypeBytes(p.out_dtype);
    absl::string_view c = p.c.Range(index * mn * cb, mn * cb, &scratch);
    const bool read = p.out_dtype == core::DType::kFP32 ? GuardedCopy(d.data(), c.data(), mn * 4)
                                                        : DecodeBf16(c, d.data());
    if (!read) return Operand::kC;
    beta = p.beta;
  }
  const bool nk = p.b_layout == core::BLayout::kNK;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, nk ? CblasTrans : CblasNoTrans, p.m, p.n, p.k, p.alpha,
              a.data(), p.k, b_float, nk ? p.k : p.n, beta, d.data(), p.n);
  if (!Store(d, p.out_dtype, out)) return Operand::kD;
  return std::nullopt;
}

}  // namespace gemm::cpu
