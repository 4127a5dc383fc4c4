// Test helpers for client shared memory: a uniquely named object, and shrinking it under the
// mappings others hold (as a careless or hostile client would).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/posix_shm.h"

namespace gemm::testing {

// Creates an object named "/gemm_<tag>_<pid>_<n>" (n counts up per process) of `bytes` bytes,
// mapped read-write and unlinked when the result is destroyed.
absl::StatusOr<std::unique_ptr<PosixShm>> CreateTestShm(const std::string& tag, int64_t bytes);

// Sets the size of the existing object `key` to `bytes` (ftruncate). Pages of any mapping past
// the new end then have nothing behind them: touching them raises SIGBUS.
absl::Status ResizeShm(const std::string& key, int64_t bytes);

}  // namespace gemm::testing
