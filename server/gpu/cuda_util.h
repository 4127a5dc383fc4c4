// Small helpers of the CUDA backend: CUDA runtime errors turned into absl::Status where they
// occur, and integer rounding. Logging goes through common/log.h (GEMM_LOG).
// Only server/gpu includes this header (it pulls in the CUDA runtime API).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"

namespace gemm::gpu {

// OK for cudaSuccess; RESOURCE_EXHAUSTED for out-of-memory errors; INTERNAL otherwise. The
// message names `what` and the CUDA error. Also clears the (non-sticky) last-error state.
inline absl::Status CudaStatus(cudaError_t err, absl::string_view what) {
  if (err == cudaSuccess) return absl::OkStatus();
  (void)cudaGetLastError();
  std::string msg =
      absl::StrCat(what, ": ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ")");
  if (err == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

// Smallest multiple of `align` (> 0) that is >= x.
inline constexpr int64_t RoundUp(int64_t x, int64_t align) {
  return (x + align - 1) / align * align;
}

// Bytes between consecutive rows of an operand in device memory, for rows of `row_bytes`: padded
// to 16 (TMA needs 16-byte pitches). Rows lie back to back only where this equals `row_bytes`.
inline constexpr int64_t DevicePitchBytes(int64_t row_bytes) { return RoundUp(row_bytes, 16); }

}  // namespace gemm::gpu
