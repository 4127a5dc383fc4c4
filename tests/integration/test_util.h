// Helpers for integration tests: random problems with host-side operands, proto filling,
// checking an output against the float64 reference, registering a resident weight.
#pragma once

#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "client/gemm_client.h"
#include "gemm/v1/gemm_service.pb.h"

namespace gemm::testing {

struct HostProblem {
  int64_t m = 0, n = 0, k = 0;
  bool b_nk = false;
  bool fp32 = false;
  float alpha = 1.0f, beta = 0.0f;
  std::string a, b, c;  // BF16 bytes; c in output dtype (empty when beta == 0)
};

// Fresh random operands (uniform [-1,1)); C only when beta != 0.
HostProblem RandomProblem(int64_t m, int64_t n, int64_t k, bool b_nk, bool fp32, float alpha,
                          float beta, absl::BitGen& gen);

// Fills `proto` with the problem (inline B).
void FillProto(const HostProblem& p, v1::Problem* proto);

// Relative error of `out` (shape [M,N] or [count,M,N] entry `index`) against the float64
// reference; +inf on shape/dtype mismatch or NaN.
double OutputError(const HostProblem& p, const v1::Output& out, int64_t index = 0);

// Tolerance for the problem's output dtype (8e-3 bf16, 1e-5 fp32).
double Tolerance(const HostProblem& p);

// Registers `bytes` as a resident BF16 [N,K] matrix named `name` (a Linear layer's weight), on
// the GPUs `devices` names (empty: the server's placement).
absl::StatusOr<v1::MatrixInfo> RegisterNkWeight(client::GemmClient& c, const std::string& name,
                                                int64_t n, int64_t k, const std::string& bytes,
                                                const std::vector<int>& devices = {});

}  // namespace gemm::testing
