// Random operands per shape.
#include "client/loadgen/operands.h"

#include <random>

#include "absl/random/random.h"
#include "common/reference_gemm.h"

namespace gemm::loadgen {

std::vector<ShapeOperands> MakeShapeOperands(const WorkloadSpec& workload, uint64_t seed) {
  absl::BitGen gen(std::seed_seq{seed});
  std::vector<ShapeOperands> shapes;
  for (const ShapeSpec& spec : workload.shapes) {
    ShapeOperands s;
    s.spec = spec;
    s.a = RandomBf16Bytes(spec.m * spec.k, gen);
    s.b = RandomBf16Bytes(spec.k * spec.n, gen);
    s.request_bytes = workload.RequestBytes(spec);
    s.response_bytes = workload.ResponseBytes(spec);
    s.message_bytes = workload.shared_memory ? 0 : s.request_bytes;
    shapes.push_back(std::move(s));
  }
  return shapes;
}

}  // namespace gemm::loadgen
