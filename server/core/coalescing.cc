// CoalescingKeyOf (see coalescing.h).
#include "server/core/coalescing.h"

#include <bit>

namespace gemm::core {

std::optional<CoalescingKey> CoalescingKeyOf(const GemmRequest& r) {
  if (r.problems.empty()) return std::nullopt;
  const Problem& p0 = r.problems[0];
  if (IsExpertGroup(r)) {
    return CoalescingKey{.experts = true,
                         .out_dtype = p0.out_dtype,
                         .alpha_bits = std::bit_cast<uint32_t>(p0.alpha),
                         .kernel = r.kernel};
  }
  if (r.kind != WorkKind::kSingle || r.problems.size() != 1 || p0.count != 1 ||
      p0.b_resident == nullptr || !p0.b.empty()) {
    return std::nullopt;
  }
  return CoalescingKey{.matrix = p0.b_resident.get(),
                       .b_layout = p0.b_layout,
                       .out_dtype = p0.out_dtype,
                       .alpha_bits = std::bit_cast<uint32_t>(p0.alpha),
                       .beta_bits = std::bit_cast<uint32_t>(p0.beta),
                       .has_c = !p0.c.empty(),
                       .kernel = r.kernel};
}

}  // namespace gemm::core
