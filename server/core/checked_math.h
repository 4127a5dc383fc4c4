// Overflow-checked int64 arithmetic for sizes computed from values a client or a flag controls
// (dimensions, counts, element sizes): every product or sum of them goes through these, so a
// large value is refused instead of wrapping around to a small one.
#pragma once

#include <cstdint>
#include <optional>

namespace gemm::core {

// a * b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// The product of all factors, or nullopt when it (or a partial product) does not fit in int64.
template <typename... Rest>
std::optional<int64_t> CheckedProduct(int64_t first, Rest... rest) {
  std::optional<int64_t> out = first;
  ((out = out.has_value() ? CheckedMul(*out, static_cast<int64_t>(rest)) : std::nullopt), ...);
  return out;
}

// a + b, or nullopt when it does not fit in int64.
inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

}  // namespace gemm::core
