// WorkBudget: admission of requests by the bytes they hold.
#include "server/core/work_budget.h"

#include "absl/strings/str_cat.h"

namespace gemm::core {

WorkBudget::WorkBudget(int64_t capacity, const char* flag) : capacity_(capacity), flag_(flag) {}

absl::Status WorkBudget::Acquire(int64_t bytes) {
  if (bytes > capacity_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("request needs ", bytes,
                     " bytes of memory (operands in the message and response), more "
                     "than the server's whole in-flight budget of ",
                     capacity_, " bytes (--", flag_, "): it can never be accepted"));
  }
  absl::MutexLock lock(&mu_);
  if (bytes > capacity_ - held_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("server busy: requests in flight hold ", held_, " of the ", capacity_,
                     " bytes of the in-flight budget (--", flag_, ") and this one needs ", bytes,
                     " more; try again later"));
  }
  held_ += bytes;
  return absl::OkStatus();
}

void WorkBudget::Release(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  held_ -= bytes;
}

int64_t WorkBudget::held() const {
  absl::MutexLock lock(&mu_);
  return held_;
}

}  // namespace gemm::core
