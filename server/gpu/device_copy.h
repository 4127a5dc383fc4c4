// Copies between device buffers by one kernel launch: a client's GPU memory mapped through CUDA
// IPC and a unit's allocation. The driver's copy calls (cudaMemcpyBatchAsync, cudaMemcpy2DAsync)
// spent ~4-5 us of host time per IPC-mapped pointer (H100, CUDA 13.0): ~50 us each
// way for a unit of 12 requests, which the copy on the stream waited for.
#pragma once

#include <cuda_runtime_api.h>

#include <span>

#include "absl/status/status.h"
#include "server/gpu/copy_batch.h"

namespace gemm::gpu {

// Enqueues `copies` (both sides device memory of the current device or mapped into it) on
// `stream` as kernel launches (one per 32 copies). Copies in one call must not overlap.
absl::Status EnqueueDeviceCopies(std::span<const Copy2D> copies, cudaStream_t stream);

}  // namespace gemm::gpu
