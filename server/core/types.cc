// Names of domain enums, and the request classification shared by batcher and backends.
#include "server/core/types.h"

#include <algorithm>
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

std::vector<int> ProblemDevices(const Problem& p) {
  if (p.operand_device >= 0) return {p.operand_device};
  if (p.b_resident == nullptr) return {};
  const std::vector<int>& d = p.b_resident->desc().devices;
  if (std::find(d.begin(), d.end(), -1) != d.end()) return {};
  return d;
}

std::optional<std::vector<int>> CommonDevices(const GemmRequest& r) {
  std::optional<std::vector<int>> common;
  for (const Problem& p : r.problems) {
    std::vector<int> d = ProblemDevices(p);
    if (d.empty()) continue;
    if (!common.has_value()) {
      common = std::move(d);
    } else {
      std::erase_if(*common, [&](int x) { return std::find(d.begin(), d.end(), x) == d.end(); });
    }
  }
  return common;
}

}  // namespace gemm::core
