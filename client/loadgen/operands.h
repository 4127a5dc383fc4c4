// The load generator's operands: one set of random BF16 A and B per shape of the mix, built once
// and shared read-only by every request of the run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "client/loadgen/workload.h"

namespace gemm::loadgen {

// The operands of one shape and the bytes a request and its answer carry.
struct ShapeOperands {
  ShapeSpec spec;
  std::string a;               // BF16 [M,K]
  std::string b;               // BF16 [K,N] or [N,K] (per WorkloadSpec::b_nk)
  int64_t request_bytes = 0;   // WorkloadSpec::RequestBytes
  int64_t response_bytes = 0;  // WorkloadSpec::ResponseBytes
  // Operand bytes the request message itself carries: request_bytes, or none when the operands
  // are in a shared-memory region.
  int64_t message_bytes = 0;
};

// Random operands in [-1, 1) for every shape of `workload`, drawn from `seed`.
std::vector<ShapeOperands> MakeShapeOperands(const WorkloadSpec& workload, uint64_t seed);

}  // namespace gemm::loadgen
