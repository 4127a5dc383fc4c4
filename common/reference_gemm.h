// Float64 reference GEMM and comparison helpers used by the CLI's --verify, the load generator
// and the tests. Slow and exact enough; not for serving.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/random/bit_gen_ref.h"
#include "absl/random/random.h"
#include "absl/strings/string_view.h"

namespace gemm {

// Shape and options of a reference problem. B is [K,N] when !b_nk, else [N,K].
struct RefProblem {
  int64_t m = 0, n = 0, k = 0;
  bool b_nk = false;
  double alpha = 1.0, beta = 0.0;
};

// D = alpha * A·op(B) + beta * C in float64. `a`, `b` are BF16 bytes; `c` is empty or floats
// (already decoded); returns M*N doubles.
std::vector<double> ReferenceGemm(const RefProblem& p, absl::string_view a_bf16,
                                  absl::string_view b_bf16, const std::vector<float>& c = {});

// Relative Frobenius error ||out - ref|| / ||ref||; +inf when any output is NaN/Inf where the
// reference is finite, or sizes differ. (||ref|| == 0 compares absolute error.)
double RelativeError(const std::vector<float>& out, const std::vector<double>& ref);

// Decodes output bytes of dtype bf16 (2 bytes/elt) or fp32 (4 bytes/elt) into floats.
std::vector<float> DecodeOutput(absl::string_view bytes, bool fp32);

// `count` BF16 values uniform in [-1, 1), as wire bytes.
std::string RandomBf16Bytes(int64_t count, absl::BitGenRef gen);

}  // namespace gemm
