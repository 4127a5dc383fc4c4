// cuBLASLt implementation of the kernel library's problems: the reference the tests and the
// benchmark compare against, and the fallback for devices without a native kernel.
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "gemm/kernel.h"

namespace gemm::kernel::reference {

// Workspace the cuBLASLt path asks for (it also runs, possibly slower, with less or none).
std::size_t CublasLtWorkspaceBytes();

// Enqueues `args` on `stream` through cuBLASLt (one strided-batched matmul). Arguments must
// already be validated. Thread-safe: handles, descriptors and the chosen algorithm are cached per
// (device, shape, layouts, alignment, workspace size).
absl::Status CublasLtGemm(const StridedBatch& args, cudaStream_t stream, void* workspace,
                          std::size_t workspace_bytes);

}  // namespace gemm::kernel::reference
