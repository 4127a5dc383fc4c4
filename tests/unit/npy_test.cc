// .npy write/read round trip and rejection of unsupported files, and of files whose header
// declares more bytes than they hold (refused before anything that size is allocated).
#include "common/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace gemm {
namespace {

TEST(NpyTest, RoundTrip2DAnd1D) {
  const std::string path = ::testing::TempDir() + "/a.npy";
  ASSERT_TRUE(WriteNpy(path, {2, 3}, {1, 2, 3, 4, 5, 6}).ok());
  auto arr = ReadNpy(path);
  ASSERT_TRUE(arr.ok()) << arr.status();
  EXPECT_EQ(arr->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(arr->data, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  ASSERT_TRUE(WriteNpy(path, {4}, {1, 2, 3, 4}).ok());
  arr = ReadNpy(path);
  ASSERT_TRUE(arr.ok()) << arr.status();
  EXPECT_EQ(arr->shape, (std::vector<int64_t>{4}));
}

TEST(NpyTest, RejectsNonNpy) {
  const std::string path = ::testing::TempDir() + "/b.npy";
  std::ofstream(path) << "not numpy";
  EXPECT_EQ(ReadNpy(path).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadNpy(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

// A .npy file of `header` (version 1.0 when `version` is 1, else 2.0) followed by `data`.
std::string NpyBytes(const std::string& header, const std::string& data, int version = 1) {
  std::string out =
      version == 1 ? std::string("\x93NUMPY\x01\x00", 8) : std::string("\x93NUMPY\x02\x00", 8);
  const size_t len = header.size();
  for (int i = 0; i < (version == 1 ? 2 : 4); ++i) out.push_back(static_cast<char>(len >> (8 * i)));
  return out + header + data;
}

absl::Status ReadBytes(const std::string& name, const std::string& bytes) {
  // This process's own name: ctest runs the tests of this binary side by side.
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return ReadNpy(path).status();
}

TEST(NpyTest, RefusesHeaderLongerThanTheFile) {
  std::string bytes("\x93NUMPY\x02\x00\xff\xff\xff\xf0{}", 14);
  const absl::Status s = ReadBytes("long_header.npy", bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("truncated header"), std::string::npos) << s;
}

TEST(NpyTest, RefusesShapeLargerThanTheData) {
  const std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }";
  const absl::Status s = ReadBytes("big_shape.npy", NpyBytes(header, std::string(16, '\0')));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("needs more than the 16 data bytes"), std::string::npos) << s;
}

TEST(NpyTest, RefusesShapeWhoseProductOverflows) {
  const std::string header =
      "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }";
  const absl::Status s = ReadBytes("overflow.npy", NpyBytes(header, std::string(64, '\0')));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TEST(NpyTest, ReadsEmptyArrayWithHugeDimension) {
  const std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 0), }";
  const std::string path = ::testing::TempDir() + "/empty.npy";
  std::ofstream(path, std::ios::binary) << NpyBytes(header, "");
  auto arr = ReadNpy(path);
  ASSERT_TRUE(arr.ok()) << arr.status();
  EXPECT_EQ(arr->shape, (std::vector<int64_t>{int64_t{1} << 62, 0}));
  EXPECT_TRUE(arr->data.empty());
}

TEST(NpyTest, RoundTripOfAHeaderOver64KiB) {
  // 30000 dimensions of 1 make a header longer than version 1.0's 2-byte length can say.
  const std::vector<int64_t> shape(30000, 1);
  const std::string path = ::testing::TempDir() + "/many_dims.npy";
  ASSERT_TRUE(WriteNpy(path, shape, {2.5f}).ok());
  auto arr = ReadNpy(path);
  ASSERT_TRUE(arr.ok()) << arr.status();
  EXPECT_EQ(arr->shape, shape);
  EXPECT_EQ(arr->data, (std::vector<float>{2.5f}));
}

TEST(NpyTest, ReadsVersion2Header) {
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  const float one = 1.0f;
  const std::string path = ::testing::TempDir() + "/v2.npy";
  std::ofstream(path, std::ios::binary)
      << NpyBytes(header, std::string(reinterpret_cast<const char*>(&one), 4), 2);
  auto arr = ReadNpy(path);
  ASSERT_TRUE(arr.ok()) << arr.status();
  EXPECT_EQ(arr->data, (std::vector<float>{1.0f}));
}

}  // namespace
}  // namespace gemm
