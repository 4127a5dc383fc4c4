// Process-wide Abseil settings every binary of the project applies first thing in main().
#pragma once

namespace gemm {

// Turns off absl::Mutex deadlock detection. Debian 12 builds Abseil without NDEBUG, so the
// detector is on by default there: every Mutex::Lock in the process (gRPC's own locks included,
// gpr_mu is an absl::Mutex) takes one global spin lock to update a lock graph - ~10x the cost of
// a lock on its own and a point of contention for every thread. Call before starting threads.
void DisableMutexDeadlockDetection();

}  // namespace gemm
