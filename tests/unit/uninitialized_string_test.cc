// ResizeUninitialized: sizes and kept prefixes (the unwritten tail cannot be tested for content;
// its callers write it all before reading).
#include "common/uninitialized_string.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace gemm {
namespace {

TEST(ResizeUninitialized, GrowsKeepsThePrefixAndShrinks) {
  std::string s = "abc";
  ResizeUninitialized(&s, 1 << 20);  // past the small-string buffer: a new allocation
  ASSERT_EQ(s.size(), size_t{1} << 20);
  EXPECT_EQ(std::memcmp(s.data(), "abc", 3), 0);
  EXPECT_EQ(s.data()[s.size()], '\0');  // still terminated
  std::memset(s.data() + 3, 'x', s.size() - 3);
  EXPECT_EQ(s[s.size() - 1], 'x');
  ResizeUninitialized(&s, 2);
  EXPECT_EQ(s, "ab");
  ResizeUninitialized(&s, 0);
  EXPECT_TRUE(s.empty());
}

TEST(ResizeUninitialized, FillsAFreshStringToTheRequestedSize) {
  std::string s;
  ResizeUninitialized(&s, 4096);
  ASSERT_EQ(s.size(), 4096u);
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i);
  EXPECT_EQ(static_cast<unsigned char>(s[4095]), 4095 % 256);
}

// Every size from every starting size, across the small-string buffer and its first growth:
// the result holds exactly the requested bytes (GCC 12's resize_and_overwrite hands its operation
// the grown capacity, which an operation returning it would keep).
TEST(ResizeUninitialized, HoldsExactlyTheRequestedSize) {
  for (size_t from = 0; from <= 64; ++from) {
    for (size_t n = 0; n <= 64; ++n) {
      std::string s(from, 'p');
      ResizeUninitialized(&s, n);
      ASSERT_EQ(s.size(), n) << "from " << from;
      EXPECT_EQ(s.data()[n], '\0');
      EXPECT_EQ(s.substr(0, std::min(from, n)), std::string(std::min(from, n), 'p'));
    }
  }
}

}  // namespace
}  // namespace gemm
