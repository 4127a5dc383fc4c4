// Validation of a domain GemmRequest against the server's limits and resident matrices, and of
// the devices a matrix is asked to live on. Every failure is an absl::Status (INVALID_ARGUMENT,
// NOT_FOUND, RESOURCE_EXHAUSTED) whose message names the offending wire field, e.g.
// "group.problems[2].a: has 10 bytes, expected M*K*2 = 12". All size arithmetic is
// overflow-checked, whatever the limits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/core/limits.h"
#include "server/core/matrix_registry.h"
#include "server/core/types.h"

namespace gemm::core {

// Where ResponseBytes() saturates: far above any response a server sends, low enough that
// thousands of saturated figures held at once cannot overflow a 64-bit sum.
inline constexpr int64_t kSaturatedResponseBytes = int64_t{1} << 50;

// The bytes of problem `p`'s output, count*M*N elements of its output dtype (also C's size), or
// nullopt when they overflow 64 bits.
std::optional<int64_t> OutputBytes(const Problem& p);

// The output bytes of `request` that its response carries (outputs written to shared memory
// excluded): what ValidateRequest() reports as RequestBytes::response for a valid request. For
// a request validation refuses (a negative size, or one past kSaturatedResponseBytes) it is
// kSaturatedResponseBytes. The one definition of a response's size: the engine's in-flight
// budget and the streams' answer budget both count it.
int64_t ResponseBytes(const GemmRequest& request);

// The byte sizes of a valid request.
struct RequestBytes {
  // A, B and C bytes wherever they live (what --max_request_bytes bounds; resident B excluded).
  int64_t operands = 0;
  // Of those, the bytes carried in the request message.
  int64_t in_message = 0;
  // D bytes the response carries (outputs written to shared memory excluded): ResponseBytes().
  int64_t response = 0;
  // What the server holds in its memory for the request until it is answered.
  int64_t held() const { return in_message + response; }
};

// Checks `request` and resolves each `b_handle` into `b_resident` (so the matrix stays alive for
// the request even if released meanwhile); returns its sizes. Does not look at the deadline.
absl::StatusOr<RequestBytes> ValidateRequest(const Limits& limits, const MatrixRegistry& registry,
                                             GemmRequest* request);

// Checks the amount of work a request of `kind` asks for before it is converted: the number of
// problems of a group, or the count of a batch, against --max_problems (a single problem: OK).
absl::Status CheckWorkCount(const Limits& limits, WorkKind kind, int64_t count);

// Checks the devices a matrix is asked to live on (wire field header.devices): each must be one
// of `available` (the backend's devices), listed once. Empty means the backend's choice.
absl::Status CheckMatrixDevices(const std::vector<int>& devices, const std::vector<int>& available);

// Wire-field prefix of problem `index` of a request of `kind`: "problem", "batch.problem" or
// "group.problems[3]".
std::string ProblemField(WorkKind kind, size_t index);

}  // namespace gemm::core
