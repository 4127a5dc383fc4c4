// AnswerBudget (see answer_budget.h).
#include "server/grpc/answer_budget.h"

#include <unistd.h>

#include <limits>

#include "absl/strings/str_cat.h"

namespace gemm::service {
namespace {

// a * b for non-negative operands, or INT64_MAX when either is negative or the product overflows.
int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &out)) {
    return std::numeric_limits<int64_t>::max();
  }
  return out;
}

// The host's physical memory in bytes, or 0 when unknown.
int64_t PhysicalMemoryBytes() {
  const int64_t pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? SaturatingMul(pages, page) : 0;
}

}  // namespace

absl::StatusOr<AnswerBudget::Options> AnswerBudget::Resolve(Options options) {
  if (options.per_stream_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_stream_answer_bytes: must be >= 1, got ", options.per_stream_bytes));
  }
  const int64_t physical = PhysicalMemoryBytes();
  if (options.server_bytes < 0 || (physical > 0 && options.server_bytes > physical)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_answer_bytes: must be between 0 (a quarter of physical memory) and the host's "
        "physical memory (",
        physical, " bytes), got ", options.server_bytes));
  }
  if (options.server_bytes == 0) options.server_bytes = DefaultServerBytes();
  return options;
}

int64_t AnswerBudget::DefaultServerBytes() {
  const int64_t physical = PhysicalMemoryBytes();
  return physical > 0 ? physical / 4 : int64_t{1} << 30;  // unknown: 1 GiB
}

int64_t AnswerBytes(const core::GemmRequest& request) {
  int64_t total = 0;
  for (const core::Problem& p : request.problems) {
    if (!p.d_dest.empty()) continue;
    const int64_t bytes = SaturatingMul(SaturatingMul(SaturatingMul(p.count, p.m), p.n),
                                        core::DTypeBytes(p.out_dtype));
    if (bytes >= kMaxAnswerBytes - total) return kMaxAnswerBytes;
    total += bytes;
  }
  return total;
}

}  // namespace gemm::service
