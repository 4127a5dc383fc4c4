// Requests the chaos test sends and how their answers are judged: random single, batched and
// grouped problems (shapes from 1x1x1 up, both dtypes and layouts, with and without C) or a
// request that is invalid on purpose, each with what its answer must be; an answer is right only
// if every output has exactly the expected shape, dtype and M*N*dtype bytes and matches the
// float64 reference.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gemm/v1/gemm_service.pb.h"
#include "tests/integration/test_util.h"

namespace gemm::testing {

using Rng = std::mt19937_64;

// What one output must hold: one problem, or `entries.size()` of a batch ([count, M, N]).
struct ExpectedOutput {
  std::vector<HostProblem> entries;
  bool batch = false;
};

// What the answer to one request must be.
struct Expected {
  std::vector<ExpectedOutput> outputs;            // when the request is valid
  absl::StatusCode code = absl::StatusCode::kOk;  // kInvalidArgument for an invalid request
  std::string field;                              // the field an invalid request's error must name
};

// How large the problems of a request are: sides of 1-9, 1-64 or 128-256.
enum class Size { kTiny, kSmall, kLarge };

// Tiny 8 times in 20, small 11 times, large once.
Size RandomSize(Rng& rng);

// A random request (id `id`) and what its answer must be. One in `invalid_every` is invalid
// (0: none).
v1::GemmRequest RandomRequest(Rng& rng, const std::string& id, Size size, int invalid_every,
                              Expected* expected);

// A random problem of shape m x n x k (inline operands).
HostProblem RandomHostProblem(Rng& rng, int64_t m, int64_t n, int64_t k);

// "" when `outputs` are exactly what `expected` says, else what is wrong.
std::string CheckOutputs(const Expected& expected,
                         const google::protobuf::RepeatedPtrField<v1::Output>& outputs);

// "" when `out` is the [M,N] result of `p`: exactly M*N*dtype bytes, every value finite, and
// `rows` rows picked at random equal to the float64 reference (for large problems, whose whole
// reference would cost the client more than the server's work).
std::string CheckOutputRows(const HostProblem& p, const v1::Output& out, Rng& rng, int rows);

// "" when the refusal (`code`, `message`) is the one an invalid request must get.
std::string CheckRefusal(const Expected& expected, int code, const std::string& message);

}  // namespace gemm::testing
