// Registry of the kernel modules compiled with bounded mbarrier waits (ptx/bounded_wait.cuh):
// each such translation unit registers, at static initialisation, a function that points its own
// copy of the device-side configuration at the timeout record. ArmWaitTimeout
// (gemm/wait_timeout.h) calls them all. Host C++ only.
#pragma once

#include <cstdint>

#include "gemm/wait_timeout.h"

namespace gemm::kernel::detail {

// Sets one module's record pointer and injected site on the current device; returns the CUDA
// error code (0: success).
using WaitTimeoutSetter = int (*)(WaitTimeoutRecord* device_record, uint32_t inject_site);

// Adds `setter` to the registry; returns true (for use in a static initialiser).
bool RegisterWaitTimeoutSetter(WaitTimeoutSetter setter);

}  // namespace gemm::kernel::detail
