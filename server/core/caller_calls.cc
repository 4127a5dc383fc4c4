// Per-caller open-call counts.
#include "server/core/caller_calls.h"

#include "absl/strings/str_cat.h"

namespace gemm::core {

CallSlot& CallSlot::operator=(CallSlot&& other) noexcept {
  if (this != &other) {
    Reset();
    calls_ = other.calls_;
    name_ = std::move(other.name_);
    other.calls_ = nullptr;
  }
  return *this;
}

void CallSlot::Reset() {
  if (calls_ != nullptr) calls_->Leave(name_);
  calls_ = nullptr;
}

absl::StatusOr<CallSlot> CallerCalls::Enter(const Caller& caller) {
  if (caller.limits.max_calls <= 0) return CallSlot();
  absl::MutexLock lock(&mu_);
  int64_t& open = open_[caller.name];
  if (open >= caller.limits.max_calls) {
    return absl::ResourceExhaustedError(
        absl::StrCat("caller '", caller.name, "' has ", open, " calls open, its limit (max_calls ",
                     caller.limits.max_calls, " in the tokens file); retry when one ends"));
  }
  ++open;
  return CallSlot(this, caller.name);
}

int64_t CallerCalls::open(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(name);
  return it == open_.end() ? 0 : it->second;
}

void CallerCalls::Leave(const std::string& name) {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(name);
  if (it != open_.end() && --it->second == 0) open_.erase(it);
}

}  // namespace gemm::core
