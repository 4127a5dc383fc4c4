// One GEMM on the CPU in float (OpenBLAS) with BF16/FP32 output, used by the CPU backend. Operand
// and output bytes may live in a client's shared memory, which the client can shrink under the
// server: every access to them is guarded (common/guarded_copy.h) and reported, never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/core/types.h"

namespace gemm::cpu {

// An operand of a problem, named by the letter of its request fields (a, b, c, d).
enum class Operand : char { kA = 'a', kB = 'b', kC = 'c', kD = 'd' };

// Computes problem entry `index` of `p` (0 <= index < p.count). `b_float` is B as floats in
// p.b_layout ([K,N] or [N,K]); `out` receives M*N elements of p.out_dtype (bytes). Returns the
// operand (a, c, or d for `out`) whose bytes vanished while it read or wrote them (a shared-memory
// page whose object shrank; `out` then holds unspecified bytes), or nullopt when it is done.
std::optional<Operand> CpuGemm(const core::Problem& p, int64_t index, const float* b_float,
                               char* out);

// Decodes BF16 bytes into floats. False when a page of `bytes` vanished while it read them.
bool DecodeBf16(absl::string_view bytes, float* out);

}  // namespace gemm::cpu
