// Helpers of the weight repository's server tests: a repository folder the test writes (one
// safetensors file of three tensors in BF16, F16 and F32, and one float32 .npy), and a Gemm
// against one of its weights by name, checked against the float64 reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "client/gemm_client.h"

namespace gemm::testing {

// A weight of the test repository: its name, shape as B ([N,K], nk) and BF16 content.
struct RepositoryWeight {
  std::string name;
  int64_t n = 0, k = 0;
  std::string bf16;
};

// Writes model.safetensors (tensors "q" BF16, "k" F16, "v" F32) and proj.npy into `folder`;
// returns the four weights (model/k, model/q, model/v, proj). Every value is exact in BF16 and
// FP16, so the server's conversion must reproduce the BF16 bytes returned.
std::vector<RepositoryWeight> WriteTestRepository(const std::string& folder);

// Runs a Gemm of a random [m, w.k] A against weight `w` by name (b_handle) through `c`;
// returns the call's error, or the output's relative error against the reference.
absl::StatusOr<double> GemmByName(client::GemmClient& c, const RepositoryWeight& w, int64_t m,
                                  absl::BitGen& gen);

}  // namespace gemm::testing
