// Argument validation of the kernel library's public entry points (INVALID_ARGUMENT with a
// message naming the bad field).
#pragma once

#include <span>

#include "absl/status/status.h"
#include "gemm/kernel.h"

namespace gemm::kernel {

// Checks shapes, leading dimensions, pointers, element alignment, enums and batch strides.
absl::Status ValidateProblem(const Problem& p);
absl::Status ValidateBatch(const StridedBatch& args);
// Also checks that all problems share d_dtype and b_layout.
absl::Status ValidateGroup(std::span<const Problem> group);

// True when every base pointer is 16-byte aligned and every row pitch and batch stride is a
// multiple of 16 bytes: what TMA-based kernels need. Other problems go to cuBLASLt.
bool TmaCompatible(const StridedBatch& args);
bool TmaCompatible(const Problem& p);

}  // namespace gemm::kernel
