// gemm_client's request building: shapes from flags, --group and .npy files; disagreements are
// INVALID_ARGUMENT naming each source and each file's real shape.
#include "client/gemm_request_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "absl/random/random.h"
#include "common/npy.h"

namespace gemm::client {
namespace {

using ::testing::HasSubstr;

// Writes a float32 .npy of `shape` (values 0, 1, 2, ...) and returns its path: a name of this
// process's own (ctest runs each test of this binary as a process of its own, side by side).
std::string WriteFile(const std::string& name, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  std::vector<float> data(count);
  for (int64_t i = 0; i < count; ++i) data[i] = static_cast<float>(i % 7);
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "-" + name;
  EXPECT_TRUE(WriteNpy(path, shape, data).ok());
  return path;
}

absl::StatusOr<BuiltRequest> Build(const GemmCommand& cmd) {
  absl::BitGen gen;
  return BuildGemmRequest(cmd, gen);
}

TEST(GemmRequestBuilderTest, ShapesComeFromTheFiles) {
  const std::string a = WriteFile("a32x64.npy", {32, 64});
  const std::string b = WriteFile("b64x48.npy", {64, 48});
  auto built = Build({.a_npy = a, .b_npy = b});
  ASSERT_TRUE(built.ok()) << built.status();
  const v1::Problem& p = built->request.problem();
  EXPECT_EQ(p.m(), 32);
  EXPECT_EQ(p.n(), 48);
  EXPECT_EQ(p.k(), 64);
  EXPECT_EQ(p.a().size(), 32u * 64 * 2);
  EXPECT_EQ(p.b().size(), 64u * 48 * 2);
  EXPECT_EQ(p.b_layout(), v1::B_LAYOUT_KN);
}

TEST(GemmRequestBuilderTest, NkFileGivesNThenK) {
  const std::string b = WriteFile("b48x64.npy", {48, 64});
  auto built = Build({.m = 5, .b_nk = true, .b_npy = b});
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->request.problem().n(), 48);
  EXPECT_EQ(built->request.problem().k(), 64);
  EXPECT_EQ(built->request.problem().m(), 5);
}

TEST(GemmRequestBuilderTest, DisagreeingFilesNameTheirShapes) {
  const std::string a = WriteFile("a32x64.npy", {32, 64});
  const std::string b = WriteFile("b48x64.npy", {48, 64});
  auto built = Build({.a_npy = a, .b_npy = b});
  ASSERT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(built.status().message(),
              HasSubstr("K differs: " + a + " (32x64 as [M,K]) gives 64, " + b +
                        " (48x64 as [K,N]) gives 48"));
}

TEST(GemmRequestBuilderTest, FlagsThatDisagreeWithAFileAreNamed) {
  const std::string a = WriteFile("a32x64.npy", {32, 64});
  auto built = Build({.m = 16, .a_npy = a});
  ASSERT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(built.status().message(),
              HasSubstr("M differs: --m gives 16, " + a + " (32x64 as [M,K]) gives 32"));
  const std::string c = WriteFile("c32x9.npy", {32, 9});
  built = Build({.n = 8, .beta = 1, .c_npy = c});
  ASSERT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(built.status().message(), HasSubstr("N differs: --n gives 8"));
}

TEST(GemmRequestBuilderTest, BatchTakesThreeDimensionalOperandsAndASharedB) {
  const std::string a = WriteFile("a3x4x5.npy", {3, 4, 5});
  const std::string b = WriteFile("b5x6.npy", {5, 6});
  auto built = Build({.batch = 3, .a_npy = a, .b_npy = b});
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->request.batch().count(), 3);
  const v1::Problem& p = built->request.batch().problem();
  EXPECT_EQ(p.m(), 4);
  EXPECT_EQ(p.k(), 5);
  EXPECT_EQ(p.n(), 6);
  EXPECT_EQ(p.a().size(), 3u * 4 * 5 * 2);
  EXPECT_EQ(p.b().size(), 5u * 6 * 2);
  EXPECT_TRUE(built->problems[0].b_shared);

  built = Build({.batch = 2, .a_npy = a});
  ASSERT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(built.status().message(), HasSubstr("shape 3x4x5 does not fit [2,M,K]"));
  const std::string a2 = WriteFile("a4x5.npy", {4, 5});
  built = Build({.batch = 2, .a_npy = a2});
  ASSERT_EQ(built.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(built.status().message(), HasSubstr("shape 4x5 does not fit [2,M,K]"));
}

TEST(GemmRequestBuilderTest, DefaultsAndGroups) {
  auto built = Build({});
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(built->request.problem().m(), 128);
  EXPECT_EQ(built->request.problem().a().size(), 128u * 128 * 2);
  built = Build({.group = "3x4x5,6x7x8"});
  ASSERT_TRUE(built.ok()) << built.status();
  ASSERT_EQ(built->request.group().problems_size(), 2);
  EXPECT_EQ(built->request.group().problems(1).k(), 8);
  EXPECT_EQ(Build({.group = "3x4"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Build({.m = 3, .group = "3x4x5"}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GemmRequestBuilderTest, RejectsWhatCannotBeBuilt) {
  EXPECT_EQ(Build({.m = -1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Build({.m = int64_t{1} << 40, .k = int64_t{1} << 40}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Build({.a_npy = ::testing::TempDir() + "/missing.npy"}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Build({.c_npy = WriteFile("c.npy", {2, 2})}).status().code(),
            absl::StatusCode::kInvalidArgument);  // C without --beta
  EXPECT_EQ(Build({.b_npy = WriteFile("b.npy", {2, 2}), .b_handle = "mat-1"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GemmRequestBuilderTest, RegistrationTakesRowsAndColsFromTheFile) {
  const std::string b = WriteFile("w48x64.npy", {48, 64});
  absl::BitGen gen;
  auto reg = BuildRegistration({.name = "w", .b_nk = true, .b_npy = b}, gen);
  ASSERT_TRUE(reg.ok()) << reg.status();
  EXPECT_EQ(reg->first.rows(), 48);
  EXPECT_EQ(reg->first.cols(), 64);
  EXPECT_EQ(reg->first.layout(), v1::B_LAYOUT_NK);
  EXPECT_EQ(reg->second.size(), 48u * 64 * 2);

  reg = BuildRegistration({.rows = 3, .b_npy = b}, gen);
  ASSERT_EQ(reg.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reg.status().message(),
              HasSubstr("rows differs: --rows gives 3, " + b + " (48x64 as [rows,cols]) gives 48"));
  EXPECT_EQ(BuildRegistration({.rows = 3}, gen).status().code(),
            absl::StatusCode::kInvalidArgument);
  reg = BuildRegistration({.rows = 3, .cols = 5}, gen);
  ASSERT_TRUE(reg.ok()) << reg.status();
  EXPECT_EQ(reg->second.size(), 3u * 5 * 2);
}

}  // namespace
}  // namespace gemm::client
