// One GEMM on the CPU in float (OpenBLAS) with BF16/FP32 output, used by the CPU backend.
#pragma once

#include <cstdint>
#include <string>

#include "server/core/types.h"

namespace gemm::cpu {

// Computes problem entry `index` of `p` (0 <= index < p.count). `b_float` is B as floats in
// p.b_layout ([K,N] or [N,K]); `out` receives M*N elements of p.out_dtype (bytes).
void CpuGemm(const core::Problem& p, int64_t index, const float* b_float, char* out);

// Decodes BF16 bytes into floats.
void DecodeBf16(absl::string_view bytes, float* out);

}  // namespace gemm::cpu
