// Host entry points of the SM100 (GB200/B200) 2-SM tcgen05 kernel, called by the kernel
// library's dispatch for compute capability 10.0.
#pragma once

#include <cstddef>
#include <span>

#include "gemm/kernel.h"

namespace gemm::kernel::sm100 {

// Enqueues a strided batch on `stream`. Arguments are already validated by the dispatch.
absl::Status Gemm(const StridedBatch& args, cudaStream_t stream, const LaunchOptions& opts);

// Enqueues a group of problems of different shapes as one persistent launch.
absl::Status GemmGrouped(std::span<const Problem> group, cudaStream_t stream,
                         const LaunchOptions& opts);

// Workspace the calls above need, in bytes.
std::size_t WorkspaceBytes(const StridedBatch& args);
std::size_t WorkspaceBytes(std::span<const Problem> group);

}  // namespace gemm::kernel::sm100
