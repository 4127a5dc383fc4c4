// Whether the load generator's answers are right: every successful response must hold outputs of
// the expected size; a sampled share (--verify_fraction) is also compared, at up to 1024 positions
// (every position when M*N <= 4096), with a float64 reference computed once per shape from the
// same BF16 operands. Read-only after construction: safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "client/loadgen/operand_region.h"
#include "client/loadgen/operands.h"
#include "client/loadgen/workload.h"
#include "gemm/v1/gemm_service.pb.h"

namespace gemm::loadgen {

class ResponseChecker {
 public:
  // `with_references`: compute the sampled references (needed by Verify). `region` (may be null)
  // holds the outputs with --shm.
  ResponseChecker(const WorkloadSpec& workload, const std::vector<ShapeOperands>& shapes,
                  bool with_references, uint64_t seed, const OperandRegion* region);

  // Whether `resp`, the answer to a request of shape `shape`, holds one output of the expected
  // size per problem (with --shm: none in the message); else says what is wrong in *why.
  bool SizesOk(int shape, const v1::GemmResponse& resp, std::string* why) const;
  // SizesOk and the sampled values (with --shm: in D slot `slot`) within the tolerance of the
  // reference: 2^-7 |ref| for BF16 output (2^-20 for FP32) plus 2^-10 sum|a*b| for the FP32
  // accumulation.
  bool Verify(int shape, int slot, const v1::GemmResponse& resp, std::string* why) const;

 private:
  // Sampled output positions (row-major index) of one shape, their float64 reference and the sum
  // of |a_ik * b_kj| there (the scale of the accumulation's rounding error).
  struct Reference {
    std::vector<int64_t> positions;
    std::vector<double> ref;
    std::vector<double> abs_dot;
  };
  Reference MakeReference(const ShapeOperands& s, uint64_t seed) const;
  bool ValuesOk(int shape, absl::string_view data, std::string* why) const;

  const WorkloadSpec workload_;
  std::vector<ShapeSpec> specs_;
  std::vector<int64_t> response_bytes_;
  std::vector<Reference> references_;  // empty without references
  const OperandRegion* region_;
};

}  // namespace gemm::loadgen
