// Turns CUDA runtime / driver / cuBLAS errors into absl::Status where they occur (return them
// with GEMM_RETURN_IF_ERROR from common/status_macros.h).
#pragma once

#include <cublasLt.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gemm::kernel {

// INTERNAL status naming `what` and the CUDA runtime error, or OK.
inline absl::Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ")"));
}

// INTERNAL status naming `what` and the CUDA driver error code, or OK. NOTE: calls no driver
// API, so the library needs no libcuda at link time (CI machines have no driver).
inline absl::Status CuStatus(CUresult err, const char* what) {
  if (err == CUDA_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": CUresult ", static_cast<int>(err)));
}

// INTERNAL status naming `what` and the cuBLAS status, or OK.
inline absl::Status CublasStatus(cublasStatus_t err, const char* what) {
  if (err == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": cuBLAS status ", static_cast<int>(err)));
}

}  // namespace gemm::kernel
