// Early-return macros for absl::Status and absl::StatusOr, shared by the kernel library, the
// server, the clients and the benchmarks. Header-only; needs Abseil's status library and nothing
// else (no gRPC, no CUDA), so CUDA translation units may include it. CMake target:
// gemm_status_macros (common/CMakeLists.txt).
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status) once and returns it from the enclosing function when it is
// not OK. The enclosing function returns absl::Status or any absl::StatusOr<T>.
#define GEMM_RETURN_IF_ERROR(expr) \
  GEMM_STATUS_MACROS_RETURN_IF_ERROR_IMPL(GEMM_STATUS_MACROS_CONCAT(gemm_status_, __LINE__), expr)

// Evaluates `expr` (an absl::StatusOr<T>) once; when it is not OK, returns its status from the
// enclosing function, else moves its value into `lhs`, which is a new variable
// (`GEMM_ASSIGN_OR_RETURN(const Plan plan, MakePlan(args));`) or an existing one
// (`GEMM_ASSIGN_OR_RETURN(plan_, MakePlan(args));`). It expands to several statements: use it
// as a statement of its own (not as the unbraced body of an `if`), at most once per line, and
// give `lhs` no unparenthesized comma (name a type alias instead).
#define GEMM_ASSIGN_OR_RETURN(lhs, expr)                                                        \
  GEMM_STATUS_MACROS_ASSIGN_OR_RETURN_IMPL(GEMM_STATUS_MACROS_CONCAT(gemm_statusor_, __LINE__), \
                                           lhs, expr)

// Implementation details of the macros above.
#define GEMM_STATUS_MACROS_CONCAT_INNER(a, b) a##b
#define GEMM_STATUS_MACROS_CONCAT(a, b) GEMM_STATUS_MACROS_CONCAT_INNER(a, b)
#define GEMM_STATUS_MACROS_RETURN_IF_ERROR_IMPL(status, expr) \
  do {                                                        \
    ::absl::Status status = (expr);                           \
    if (!status.ok()) return status;                          \
  } while (0)
#define GEMM_STATUS_MACROS_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                                             \
  if (!statusor.ok()) return std::move(statusor).status();            \
  lhs = *std::move(statusor)
