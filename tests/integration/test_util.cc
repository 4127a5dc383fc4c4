// Integration test helpers.
#include "tests/integration/test_util.h"

#include <limits>
#include <vector>

#include "common/bf16.h"
#include "common/reference_gemm.h"

namespace gemm::testing {

HostProblem RandomProblem(int64_t m, int64_t n, int64_t k, bool b_nk, bool fp32, float alpha,
                          float beta, absl::BitGen& gen) {
  HostProblem p{m, n, k, b_nk, fp32, alpha, beta};
  p.a = RandomBf16Bytes(m * k, gen);
  p.b = RandomBf16Bytes(k * n, gen);
  if (beta != 0.0f) {
    if (fp32) {
      std::vector<float> c(m * n);
      for (float& x : c) x = absl::Uniform<float>(gen, -1.0f, 1.0f);
      p.c.assign(reinterpret_cast<const char*>(c.data()), c.size() * 4);
    } else {
      p.c = RandomBf16Bytes(m * n, gen);
    }
  }
  return p;
}

void FillProto(const HostProblem& p, v1::Problem* proto) {
  proto->set_m(p.m);
  proto->set_n(p.n);
  proto->set_k(p.k);
  proto->set_a(p.a);
  proto->set_b(p.b);
  proto->set_b_layout(p.b_nk ? v1::B_LAYOUT_NK : v1::B_LAYOUT_KN);
  proto->set_alpha(p.alpha);
  if (p.beta != 0.0f) {
    proto->set_beta(p.beta);
    proto->set_c(p.c);
  }
  proto->set_output_dtype(p.fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16);
}

double OutputError(const HostProblem& p, const v1::Output& out, int64_t index) {
  const double inf = std::numeric_limits<double>::infinity();
  if (out.dtype() != (p.fp32 ? v1::DTYPE_FP32 : v1::DTYPE_BF16)) return inf;
  const int dims = out.shape_size();
  if (dims < 2 || out.shape(dims - 2) != p.m || out.shape(dims - 1) != p.n) return inf;
  const int64_t elem = p.fp32 ? 4 : 2, mn = p.m * p.n;
  if (static_cast<int64_t>(out.data().size()) < (index + 1) * mn * elem) return inf;
  const auto got =
      DecodeOutput(absl::string_view(out.data()).substr(index * mn * elem, mn * elem), p.fp32);
  std::vector<float> c;
  if (!p.c.empty()) c = DecodeOutput(p.c, p.fp32);
  const auto ref = ReferenceGemm({p.m, p.n, p.k, p.b_nk, p.alpha, p.beta}, p.a, p.b, c);
  return RelativeError(got, ref);
}

double Tolerance(const HostProblem& p) { return p.fp32 ? 1e-5 : 8e-3; }

absl::StatusOr<v1::MatrixInfo> RegisterNkWeight(client::GemmClient& c, const std::string& name,
                                                int64_t n, int64_t k, const std::string& bytes,
                                                const std::vector<int>& devices) {
  v1::MatrixHeader header;
  header.set_name(name);
  header.set_rows(n);
  header.set_cols(k);
  header.set_dtype(v1::DTYPE_BF16);
  header.set_layout(v1::B_LAYOUT_NK);
  for (int d : devices) header.add_devices(d);
  return c.RegisterMatrix(header, bytes);
}

}  // namespace gemm::testing
