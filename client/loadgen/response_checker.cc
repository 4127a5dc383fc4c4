// Output size checks and sampled verification against a float64 reference.
#include "client/loadgen/response_checker.h"

#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/bf16.h"

namespace gemm::loadgen {
namespace {

float Bf16At(absl::string_view bytes, int64_t index) {
  uint16_t h;
  std::memcpy(&h, bytes.data() + 2 * index, 2);
  return Bf16ToFloat(h);
}

}  // namespace

ResponseChecker::ResponseChecker(const WorkloadSpec& workload,
                                 const std::vector<ShapeOperands>& shapes, bool with_references,
                                 uint64_t seed, const OperandRegion* region)
    : workload_(workload), region_(region) {
  for (const ShapeOperands& s : shapes) {
    specs_.push_back(s.spec);
    response_bytes_.push_back(s.response_bytes);
    if (with_references) references_.push_back(MakeReference(s, seed));
  }
}

ResponseChecker::Reference ResponseChecker::MakeReference(const ShapeOperands& s,
                                                          uint64_t seed) const {
  const int64_t m = s.spec.m, n = s.spec.n, k = s.spec.k;
  const bool nk = workload_.b_nk;
  Reference r;
  if (m * n <= 4096) {
    for (int64_t i = 0; i < m * n; ++i) r.positions.push_back(i);
  } else {
    std::mt19937_64 rng(seed ^ 0x5eed);
    std::uniform_int_distribution<int64_t> pick(0, m * n - 1);
    r.positions.push_back(0);
    r.positions.push_back(m * n - 1);
    for (int i = 0; i < 1022; ++i) r.positions.push_back(pick(rng));
  }
  for (int64_t pos : r.positions) {
    const int64_t i = pos / n, j = pos % n;
    double dot = 0, abs_dot = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const double av = Bf16At(s.a, i * k + kk);
      const double bv = Bf16At(s.b, nk ? j * k + kk : kk * n + j);
      dot += av * bv;
      abs_dot += std::fabs(av * bv);
    }
    r.ref.push_back(dot);
    r.abs_dot.push_back(abs_dot);
  }
  return r;
}

bool ResponseChecker::SizesOk(int shape, const v1::GemmResponse& resp, std::string* why) const {
  const int outputs = std::max(1, workload_.experts_per_request);
  if (resp.outputs_size() != outputs) {
    *why = absl::StrCat("expected ", outputs, " output(s), got ", resp.outputs_size());
    return false;
  }
  const int64_t want = response_bytes_[shape] / outputs;
  for (int j = 0; j < outputs; ++j) {
    // With --shm, D is in the region and the output carries shape and dtype only.
    const int64_t got = workload_.shared_memory && resp.outputs(j).data().empty()
                            ? want
                            : static_cast<int64_t>(resp.outputs(j).data().size());
    if (got != want || (workload_.shared_memory && !resp.outputs(j).data().empty())) {
      *why = absl::StrCat("output ", j, " has ", resp.outputs(j).data().size(),
                          " bytes in the message, expected ", workload_.shared_memory ? 0 : want);
      return false;
    }
  }
  return true;
}

bool ResponseChecker::Verify(int shape, int slot, const v1::GemmResponse& resp,
                             std::string* why) const {
  if (!SizesOk(shape, resp, why)) return false;
  if (references_.empty()) return true;
  if (workload_.shared_memory) return ValuesOk(shape, region_->Output(shape, slot), why);
  // Every expert holds the shape's B, so every output has the shape's reference.
  for (int j = 0; j < resp.outputs_size(); ++j) {
    if (!ValuesOk(shape, resp.outputs(j).data(), why)) {
      if (resp.outputs_size() > 1) *why = absl::StrCat("output ", j, ": ", *why);
      return false;
    }
  }
  return true;
}

bool ResponseChecker::ValuesOk(int shape, absl::string_view data, std::string* why) const {
  const Reference& r = references_[shape];
  const bool fp32 = workload_.output_fp32;
  const int64_t n = specs_[shape].n;
  if (static_cast<int64_t>(data.size()) !=
      response_bytes_[shape] / std::max(1, workload_.experts_per_request)) {
    *why = absl::StrCat("output bytes unavailable (", data.size(), " bytes)");
    return false;
  }
  for (size_t i = 0; i < r.positions.size(); ++i) {
    const int64_t pos = r.positions[i];
    double got;
    if (fp32) {
      float f;
      std::memcpy(&f, data.data() + 4 * pos, 4);
      got = f;
    } else {
      got = Bf16At(data, pos);
    }
    // BF16 output rounding (2^-9 relative, given 4x margin) plus FP32 accumulation error,
    // bounded by K * 2^-24 * sum|a*b| (given generous margin via 2^-10 * sum|a*b|).
    const double tol =
        std::ldexp(std::fabs(r.ref[i]), fp32 ? -20 : -7) + std::ldexp(r.abs_dot[i], -10) + 1e-30;
    if (!(std::fabs(got - r.ref[i]) <= tol)) {
      *why = absl::StrFormat("D[%d,%d] = %g, reference %g (tolerance %g)", pos / n, pos % n, got,
                             r.ref[i], tol);
      return false;
    }
  }
  return true;
}

}  // namespace gemm::loadgen
