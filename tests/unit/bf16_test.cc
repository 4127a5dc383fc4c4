// BF16 conversion: round to nearest even (ties), NaN stays NaN, Inf, overflow, subnormals.
#include "common/bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace gemm {
namespace {

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Bf16Test, ExactValuesRoundTrip) {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 0.15625f, 65536.0f}) {
    EXPECT_EQ(Bf16ToFloat(FloatToBf16(f)), f);
  }
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16(-0.0f), 0x8000);
}

TEST(Bf16Test, TiesRoundToEven) {
  // 1 + 2^-8 is halfway between 1.0 (0x3f80, even) and 1+2^-7 (0x3f81): rounds down to even.
  EXPECT_EQ(FloatToBf16(FromBits(0x3f808000)), 0x3f80);
  // Halfway between 0x3f81 (odd) and 0x3f82: rounds up to even.
  EXPECT_EQ(FloatToBf16(FromBits(0x3f818000)), 0x3f82);
  // Just above halfway rounds up; just below rounds down.
  EXPECT_EQ(FloatToBf16(FromBits(0x3f808001)), 0x3f81);
  EXPECT_EQ(FloatToBf16(FromBits(0x3f807fff)), 0x3f80);
}

TEST(Bf16Test, NanStaysNanInfStaysInf) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(nan))));
  // A NaN whose payload lives only in the low 16 bits must not become Inf.
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(FromBits(0x7f800001)))));
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(FromBits(0xff800001)))));
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatToBf16(inf), 0x7f80);
  EXPECT_EQ(FloatToBf16(-inf), 0xff80);
}

TEST(Bf16Test, OverflowRoundsToInf) {
  // The largest float rounds up past the largest finite BF16 (0x7f7f) to +Inf.
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(FloatToBf16(FromBits(0x7f7f0000)), 0x7f7f);
}

TEST(Bf16Test, SubnormalsRound) {
  EXPECT_EQ(FloatToBf16(FromBits(0x00010000)), 0x0001);
  EXPECT_EQ(FloatToBf16(FromBits(0x00018000)), 0x0002);  // tie to even
}

TEST(Bf16Test, ByteBuffersAreLittleEndian) {
  const float v[] = {1.0f, -2.0f};
  const std::string bytes = FloatsToBf16Bytes(v);
  ASSERT_EQ(bytes.size(), 4u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x80);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x3f);
  float back[2];
  Bf16BytesToFloats(bytes, back);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -2.0f);
}

}  // namespace
}  // namespace gemm
