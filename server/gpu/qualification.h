// Start-up kernel qualification of one GPU, parent side: runs the gemm_qualify child
// (qualify_main.cc) under the deadlines of core::Qualify and turns its report into the set of
// variants the device may run, a verdict per variant and log lines. The server's own CUDA
// context never runs a case.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gemm/kernel.h"
#include "server/core/backend.h"

namespace gemm::gpu {

struct DeviceQualificationOptions {
  // The gemm_qualify binary; empty: "gemm_qualify" next to the running executable.
  std::string binary;
  // Per-case and whole-run deadlines (the child is killed past either). Defaults 30 s and 120 s.
  absl::Duration case_deadline = absl::Seconds(30);
  absl::Duration total_deadline = absl::Seconds(120);
  // Testing hook: the child corrupts the native kernel's output before comparing.
  bool force_mismatch = false;
};

struct DeviceQualification {
  uint64_t usable_variants = 0;  // bit i: variant i passed (LaunchOptions::usable_variants)
  std::vector<core::KernelDescription> verdicts;  // one per native variant
  bool cublaslt_ok = false;                       // kCublasLt devices: cuBLASLt matched float64
  bool cublaslt_wrong = false;  // kCublasLt devices: cuBLASLt computed wrong numbers
  std::string summary;          // one line for the log and GetServerInfo
};

// Qualifies `kind` (the device's selected kernel) on `device`. Blocking, bounded by the total
// deadline plus one case deadline. Logs one line per case. Never fails: when no child can run
// (no gemm_qualify, fork failure) every native variant is unusable ("not_run") and the device
// serves through cuBLASLt.
DeviceQualification QualifyDevice(int device, kernel::KernelKind kind,
                                  const DeviceQualificationOptions& options);

}  // namespace gemm::gpu
