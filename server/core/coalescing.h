// Which requests may run together as one unit, decided in one place for the batcher (which
// gathers them into one batch) and the backends (which turn a batch into units): a single GEMM
// against a resident B stacks its A rows with others on that matrix; expert groups stack with
// each other. No gRPC, no CUDA.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "server/core/types.h"

namespace gemm::core {

// What coalesced requests must share. Expert groups (`experts`, matrix null) coalesce whatever
// resident matrices they name: the backend stacks the rows of the problems that share one.
struct CoalescingKey {
  const ResidentMatrix* matrix = nullptr;
  bool experts = false;
  BLayout b_layout = BLayout::kKN;
  DType out_dtype = DType::kBF16;
  uint32_t alpha_bits = 0;  // bit patterns: exact equality, NaN-safe
  uint32_t beta_bits = 0;
  bool has_c = false;
  std::string kernel;

  bool operator==(const CoalescingKey& o) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const CoalescingKey& k) {
    return H::combine(std::move(h), k.matrix, k.experts, k.b_layout, k.out_dtype, k.alpha_bits,
                      k.beta_bits, k.has_c, k.kernel);
  }
};

// The key under which `r` coalesces with other requests, or nullopt when it runs alone. A single
// problem (kSingle, count 1) against a resident B with no inline B coalesces with the requests
// that share its matrix, B layout, output dtype, alpha, beta, whether C is given and the
// requested kernel; an expert group (IsExpertGroup) with the expert groups that share its output
// dtype, alpha and kernel. Everything else (inline B, batch requests, other groups) runs alone.
std::optional<CoalescingKey> CoalescingKeyOf(const GemmRequest& r);

}  // namespace gemm::core
