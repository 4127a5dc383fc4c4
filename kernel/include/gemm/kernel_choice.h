// Which kernel serves a request on a device, decided here once for every caller: from the kernel
// name the client asked for, the kernel the device's dispatch picks (SelectKernel) and whether
// that kernel passed its start-up self-test. Pure host logic: no CUDA calls.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gemm/kernel.h"

namespace gemm::kernel {

// What a device offers: its dispatch's kernel and whether the kernel passed its self-test.
struct DeviceKernels {
  int device = 0;
  int cc_major = 0, cc_minor = 0;
  KernelKind selected = KernelKind::kCublasLt;  // SelectKernel(device)
  bool selected_usable = true;                  // kCublasLt is always usable
  absl::string_view self_test_detail;           // why the selected kernel is not usable
};

// The kind to launch with and the kernel name to report.
struct KernelChoice {
  KernelKind kind = KernelKind::kAuto;
  std::string name;
};

// "" or "auto": the device's kernel (kAuto, which falls back to cuBLASLt inside Gemm() for calls
// the native kernel does not cover), or kCublasLt when that kernel failed its self-test. A
// kernel's name (KernelName): that kernel; FAILED_PRECONDITION when it is the device's but failed
// its self-test, or is another device generation's. INVALID_ARGUMENT for any other name.
absl::StatusOr<KernelChoice> ChooseKernel(absl::string_view requested, const DeviceKernels& device);

}  // namespace gemm::kernel
