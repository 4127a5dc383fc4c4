// Process-wide Abseil settings (see abseil_runtime.h).
#include "common/abseil_runtime.h"

#include <absl/synchronization/mutex.h>

namespace gemm {

void DisableMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace gemm
