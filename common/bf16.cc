// BF16 buffer conversions.
#include "common/bf16.h"

namespace gemm {

void Bf16BytesToFloats(absl::string_view bytes, float* out) {
  const size_t n = bytes.size() / 2;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t i = 0; i < n; ++i) {
    out[i] = Bf16ToFloat(static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8)));
  }
}

std::string FloatsToBf16Bytes(std::span<const float> values) {
  std::string out(values.size() * 2, '\0');
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = FloatToBf16(values[i]);
    p[2 * i] = static_cast<unsigned char>(h & 0xff);
    p[2 * i + 1] = static_cast<unsigned char>(h >> 8);
  }
  return out;
}

void RoundToBf16InPlace(std::span<float> values) {
  for (float& v : values) v = Bf16ToFloat(FloatToBf16(v));
}

}  // namespace gemm
