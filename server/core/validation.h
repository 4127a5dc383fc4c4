// Validation of a domain GemmRequest against the server's limits and resident matrices. Every
// failure is an absl::Status (INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED) whose message names
// the offending wire field, e.g. "group.problems[2].a: has 10 bytes, expected M*K*2 = 12".
#pragma once

#include "absl/status/status.h"
#include "server/core/limits.h"
#include "server/core/matrix_registry.h"
#include "server/core/types.h"

namespace gemm::core {

// Checks `request` and resolves each `b_handle` into `b_resident` (so the matrix stays alive for
// the request even if released meanwhile). Does not look at the deadline.
absl::Status ValidateRequest(const Limits& limits, const MatrixRegistry& registry,
                             GemmRequest* request);

// Wire-field prefix of problem `index` of a request of `kind`: "problem", "batch.problem" or
// "group.problems[3]".
std::string ProblemField(WorkKind kind, size_t index);

}  // namespace gemm::core
