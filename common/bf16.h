// BF16 <-> float conversion (round to nearest even, NaN preserved as a quiet NaN) and helpers for
// BF16 byte buffers as they travel on the wire (little-endian uint16 per element).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gemm {

// Rounds a float to BF16 to nearest, ties to even. NaN stays NaN (quiet), +-Inf stays Inf,
// values that round past the largest finite BF16 become Inf.
inline uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  const uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return static_cast<uint16_t>(u >> 16);
}

// Widens BF16 to float (exact).
inline float Bf16ToFloat(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Converts `n` BF16 values stored as bytes (2 per element) into floats.
void Bf16BytesToFloats(absl::string_view bytes, float* out);
// Converts floats to BF16 bytes (RNE), appended to nothing: returns 2*n bytes.
std::string FloatsToBf16Bytes(std::span<const float> values);
// Rounds every float to BF16 precision and back (what the server will see).
void RoundToBf16InPlace(std::span<float> values);

}  // namespace gemm
