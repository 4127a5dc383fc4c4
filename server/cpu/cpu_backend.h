// CPU reference backend: computes in float with OpenBLAS (cblas_sgemm) and rounds to BF16 (RNE).
// It is what serves when no GPU is present; correct, not fast. Resident matrices are kept as
// floats in host memory.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "server/core/backend.h"

namespace gemm::cpu {

struct CpuBackendOptions {
  // Worker threads pulling batches. Default 2.
  int workers = 2;
  // OpenBLAS threads per sgemm call. Default 1 (parallelism comes from the workers).
  int blas_threads = 1;
};

// Creates the CPU backend.
absl::StatusOr<std::unique_ptr<core::Backend>> CreateCpuBackend(const CpuBackendOptions& options);

}  // namespace gemm::cpu
