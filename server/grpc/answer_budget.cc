// AnswerBudget (see answer_budget.h).
#include "server/grpc/answer_budget.h"

#include "absl/strings/str_cat.h"
#include "server/core/usable_memory.h"

namespace gemm::service {
namespace {

// The memory this process may use (host RAM or its cgroup limit), or 0 when unknown.
int64_t UsableMemoryBytes() { return core::DetectUsableMemory().bytes; }

}  // namespace

absl::StatusOr<AnswerBudget::Options> AnswerBudget::Resolve(Options options) {
  if (options.per_stream_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_stream_answer_bytes: must be >= 1, got ", options.per_stream_bytes));
  }
  const int64_t usable = UsableMemoryBytes();
  // NOTE: half, so that with the engine's in-flight budget (at most the other half,
  // core::kMaxInFlightShare) the bytes both bound together fit in the host's memory.
  if (options.server_bytes < 0 || (usable > 0 && options.server_bytes > usable / 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_answer_bytes: must be between 0 (a quarter of usable memory) and half the host's "
        "usable memory (",
        usable / 2, " bytes), got ", options.server_bytes));
  }
  if (options.server_bytes == 0) options.server_bytes = DefaultServerBytes();
  return options;
}

int64_t AnswerBudget::DefaultServerBytes() {
  const int64_t usable = UsableMemoryBytes();
  return usable > 0 ? usable / 4 : int64_t{1} << 30;  // unknown: 1 GiB
}

}  // namespace gemm::service
