// OperandBytes: one range or pieces; ranges are views where they lie in one piece and copies only
// where they span pieces.
#include "server/core/operand_bytes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gemm::core {
namespace {

TEST(OperandBytesTest, OneRange) {
  const std::string s = "abcdef";
  const OperandBytes b = s;
  EXPECT_TRUE(b.contiguous());
  EXPECT_EQ(b.data(), s.data());
  EXPECT_EQ(b.size(), 6u);
  std::string scratch;
  const absl::string_view r = b.Range(2, 3, &scratch);
  EXPECT_EQ(r, "cde");
  EXPECT_EQ(r.data(), s.data() + 2) << "a view, not a copy";
  EXPECT_TRUE(OperandBytes().empty());
  EXPECT_EQ(OperandBytes().data(), nullptr);
}

TEST(OperandBytesTest, PiecesDropEmptyOnesAndCopyOnlyAcrossBoundaries) {
  const std::string x = "abc", y = "defg", z = "hi";
  const OperandBytes b = OperandBytes::Pieces({x, "", y, z});
  EXPECT_FALSE(b.contiguous());
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.size(), 9u);
  EXPECT_EQ(b.pieces().size(), 3u);
  std::string scratch;
  const absl::string_view inside = b.Range(4, 2, &scratch);
  EXPECT_EQ(inside, "ef");
  EXPECT_EQ(inside.data(), y.data() + 1) << "within one piece: a view";
  EXPECT_EQ(b.Range(1, 7, &scratch), "bcdefgh");
  EXPECT_EQ(b.Range(0, 9, &scratch), "abcdefghi");
  EXPECT_EQ(b.Range(7, 2, &scratch), "hi");
  EXPECT_TRUE(OperandBytes::Pieces({"only"}).contiguous());
}

}  // namespace
}  // namespace gemm::core
