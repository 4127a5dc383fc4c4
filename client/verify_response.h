// gemm_client --verify: every output of a response against a float64 reference computed by
// OpenBLAS (cblas_dgemm) from the same BF16 operands.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/gemm_request_builder.h"
#include "common/reference_gemm.h"
#include "gemm/v1/gemm_service.pb.h"

namespace gemm::client {

// D = alpha * A·op(B) + beta * C in float64 through cblas_dgemm, with the contract of
// gemm::ReferenceGemm: `a`, `b` are BF16 bytes, `c` is empty or M*N floats; returns M*N doubles.
std::vector<double> BlasReferenceGemm(const RefProblem& p, absl::string_view a_bf16,
                                      absl::string_view b_bf16, const std::vector<float>& c = {});

// How the request's problems were set up.
struct VerifyOptions {
  bool b_nk = false;
  bool out_fp32 = false;
  double alpha = 1.0, beta = 0.0;
};

// The largest relative error (gemm::RelativeError) of any matrix of `response` against the
// reference of `problems` (one output per problem, in order). INTERNAL when the response does not
// hold one output of the expected size per problem.
absl::StatusOr<double> WorstRelativeError(const std::vector<ProblemOperands>& problems,
                                          const VerifyOptions& options,
                                          const v1::GemmResponse& response);

}  // namespace gemm::client
