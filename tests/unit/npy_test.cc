// .npy write/read round trip and rejection of unsupported files.
#include "common/npy.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gemm
