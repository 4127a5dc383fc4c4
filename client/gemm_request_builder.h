// Builds the request of `gemm_client gemm` from its options: the shapes come from --m/--n/--k,
// --group or the .npy operand files (which must agree with each other and with the flags given),
// the operands from the files or random BF16 values. The host-side operands are kept for
// --verify.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/random/bit_gen_ref.h"
#include "absl/status/statusor.h"
#include "gemm/v1/gemm_service.pb.h"

namespace gemm::client {

// Options of one `gemm_client gemm` call.
struct GemmCommand {
  // Problem shape; unset: from the .npy files, else 128.
  std::optional<int64_t> m, n, k;
  int64_t batch = 0;      // same-shape batch of this many problems (0: one problem)
  std::string group;      // heterogeneous group "MxNxK,MxNxK,..." (empty: none)
  bool b_nk = false;      // B is [N,K] instead of [K,N]
  bool out_fp32 = false;  // output (and C) dtype FP32 instead of BF16
  double alpha = 1.0, beta = 0.0;
  // Operands from float32/float64 .npy files: A [M,K], B [K,N] or [N,K], C [M,N]; with --batch,
  // [batch,...] (B may also be one matrix shared by the batch). Empty: random.
  std::string a_npy, b_npy, c_npy;
  std::string b_handle;  // resident matrix used as B (then no b_npy)
  std::string kernel;    // GemmRequest.kernel
  bool priority_high = false;
};

// One problem's host-side operands (for the whole batch), kept for --verify.
struct ProblemOperands {
  int64_t m = 0, n = 0, k = 0;
  int64_t count = 1;     // matrices in the batch
  std::string a;         // BF16 [count,M,K]
  std::string b;         // BF16 [K,N] or [N,K], once or `count` times; empty with b_handle
  bool b_shared = true;  // one B for the whole batch
  std::string c;         // [count,M,N] in the output dtype; empty when beta == 0
};

struct BuiltRequest {
  v1::GemmRequest request;
  std::vector<ProblemOperands> problems;  // one per problem of the request, in order
};

// Builds the request. INVALID_ARGUMENT names the flag or file when the shapes disagree (giving
// each file's real shape) or a file does not fit; NOT_FOUND when a file cannot be read.
absl::StatusOr<BuiltRequest> BuildGemmRequest(const GemmCommand& command, absl::BitGenRef gen);

// Options of `gemm_client register`.
struct RegisterCommand {
  std::optional<int64_t> rows, cols;  // unset: from b_npy (required without it)
  std::string name;
  bool b_nk = false;
  std::string b_npy;  // the matrix from a .npy file; empty: random
};

// The header and BF16 bytes of the matrix to register; INVALID_ARGUMENT when --rows/--cols
// disagree with the file's shape (naming it) or are missing without a file.
absl::StatusOr<std::pair<v1::MatrixHeader, std::string>> BuildRegistration(
    const RegisterCommand& command, absl::BitGenRef gen);

}  // namespace gemm::client
