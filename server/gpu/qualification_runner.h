// Runs one kernel qualification case (gemm/qualification.h) on the current device: the native
// kernel and cuBLASLt on the same fresh random operands (strided, batched or grouped), compared;
// cuBLASLt itself is checked against a float64 CPU reference. Called only in the qualification
// child process (qualify_main.cc), never in the server's own context.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "gemm/kernel.h"
#include "gemm/qualification.h"

namespace gemm::gpu {

struct CaseRunOptions {
  // The kernel family under qualification (kCublasLt: check cuBLASLt against float64 only).
  kernel::KernelKind kind = kernel::KernelKind::kCublasLt;
  // Testing hook: corrupt one element of the native kernel's output before the comparison, so
  // the failure path (variant unusable, serve through cuBLASLt) can be exercised.
  bool force_mismatch = false;
};

// OK when the kernel, allowed to run only the case's predicted variants, matches cuBLASLt.
// `*detail` receives a one-line summary either way. Blocking; uses its own stream and
// cudaMalloc'd buffers, freed before returning.
absl::Status RunQualificationCase(const kernel::QualificationCase& c, const CaseRunOptions& options,
                                  std::string* detail);

}  // namespace gemm::gpu
