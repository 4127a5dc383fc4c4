// Planning a unit (server/gpu/unit.h): where each operand goes in the unit's device allocation
// and staging block, the host<->device copies, and the kernel-library launches, for the four unit
// shapes (coalesced stack over one resident B, strided batch, group, expert groups). Pure host
// arithmetic over the requests: no CUDA calls.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "server/core/types.h"
#include "server/gpu/unit.h"

namespace gemm::gpu {

// Fills `u`'s plan (ins, outs, launches, outputs, batch_rows) with device offsets from `base`
// for device ordinal `device`. Run twice: `measure` (base 0) also sizes the workspace and sets
// u.device_bytes / u.staging_bytes; the second pass, with the real allocation, must produce the
// same sizes (INTERNAL otherwise). Requests whose operands do not match their shapes get
// INVALID_ARGUMENT.
absl::Status BuildPlan(Unit& u, uintptr_t base, int device, bool measure);

}  // namespace gemm::gpu
