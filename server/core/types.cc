// Names of domain enums, and the request classification shared by batcher and backends.
#include "server/core/types.h"

#include <bit>
#include <cstdint>

namespace gemm::core {

const char* DTypeName(DType t) { return t == DType::kBF16 ? "bf16" : "fp32"; }
const char* BLayoutName(BLayout l) { return l == BLayout::kKN ? "kn" : "nk"; }

bool IsExpertGroup(const GemmRequest& r) {
  if (r.kind != WorkKind::kGroup || r.problems.empty()) return false;
  const Problem& p0 = r.problems[0];
  for (const Problem& p : r.problems) {
    if (p.count != 1 || p.b_resident == nullptr || !p.b.empty() || !p.c.empty() ||
        p.out_dtype != p0.out_dtype ||
        std::bit_cast<uint32_t>(p.alpha) != std::bit_cast<uint32_t>(p0.alpha)) {
      return false;
    }
  }
  return true;
}

}  // namespace gemm::core
