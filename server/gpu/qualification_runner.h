// Start-up self-test: runs a device's chosen kernel and cuBLASLt on the same fresh random
// problems (strided, small-M, FP32 out with C, batched, grouped; both B layouts) and compares
// them; cuBLASLt is itself checked against a float64 CPU reference on one problem. A kernel that
// fails is marked unusable and the device serves through cuBLASLt.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "gemm/kernel.h"

namespace gemm::gpu {

struct SelfTestOptions {
  // Testing hook: corrupt one element of the chosen kernel's output before the comparison, so
  // the failure path (log, mark unusable, serve through cuBLASLt) can be exercised.
  bool force_mismatch = false;
};

// Tests `kind` on `device` (made current). OK when it matches cuBLASLt on every problem; else
// the first mismatch or error. `*detail` receives a one-line summary either way. Blocking (runs
// at start-up only; uses its own stream and cudaMalloc'd buffers, freed before returning).
absl::Status SelfTest(int device, kernel::KernelKind kind, const SelfTestOptions& options,
                      std::string* detail);

}  // namespace gemm::gpu
