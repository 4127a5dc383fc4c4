// Counts the calls each caller has open, so one caller over its CallerLimits::max_calls is refused
// RESOURCE_EXHAUSTED while the others keep being served. Thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/core/caller.h"

namespace gemm::core {

class CallerCalls;

// One open call of one caller; gives the call back when destroyed. Movable, not copyable.
class CallSlot {
 public:
  CallSlot() = default;
  CallSlot(CallSlot&& other) noexcept { *this = std::move(other); }
  CallSlot& operator=(CallSlot&& other) noexcept;
  CallSlot(const CallSlot&) = delete;
  CallSlot& operator=(const CallSlot&) = delete;
  ~CallSlot() { Reset(); }

  // Gives the call back now (idempotent).
  void Reset();

 private:
  friend class CallerCalls;
  CallSlot(CallerCalls* calls, std::string name) : calls_(calls), name_(std::move(name)) {}
  CallerCalls* calls_ = nullptr;
  std::string name_;
};

class CallerCalls {
 public:
  // A slot for one more call of `caller`; RESOURCE_EXHAUSTED naming the caller and its cap when
  // it already has limits.max_calls open. A caller without a cap gets an empty slot (not counted).
  // Slots must not outlive this object.
  absl::StatusOr<CallSlot> Enter(const Caller& caller);

  // Calls `name` has open now.
  int64_t open(const std::string& name) const;

 private:
  friend class CallSlot;
  void Leave(const std::string& name);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, int64_t> open_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gemm::core
