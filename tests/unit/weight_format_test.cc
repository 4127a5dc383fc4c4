// Weight file indexing: a well-formed safetensors file indexes its 2-D BF16/F16/F32 tensors and
// skips the rest; every malformed header (length past the end or 2^60, offsets out of range or
// overlapping, size not matching the shape, unknown dtype, not JSON) is a clear error naming the
// file, never a crash; .npy headers; FP16/FP32 -> BF16 rounds to nearest even.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "common/bf16.h"
#include "common/npy.h"
#include "server/core/weight_repository_format.h"
#include "tests/common/weight_files.h"

namespace gemm::core {
namespace {

using gemm::testing::SafetensorsFile;
using gemm::testing::SafetensorsFileWithHeader;

class WeightFormatTest : public ::testing::Test {
 protected:
  // Writes `bytes` as <folder>/<name> and indexes it.
  absl::StatusOr<WeightFileIndex> Index(const std::string& name, const std::string& bytes,
                                        bool strict = false) {
    const std::string path = folder_ + "/" + name;
    gemm::testing::WriteBytes(path, bytes);
    return IndexWeightFile(path, strict);
  }

  void ExpectError(const std::string& bytes, const std::string& needle) {
    auto index = Index("bad.safetensors", bytes);
    ASSERT_FALSE(index.ok());
    EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument) << index.status();
    EXPECT_NE(index.status().message().find("bad.safetensors"), std::string::npos)
        << index.status();
    EXPECT_NE(index.status().message().find(needle), std::string::npos) << index.status();
  }

  std::string folder_ = gemm::testing::FreshFolder("weight_format_test");
};

TEST_F(WeightFormatTest, IndexesTwoDimensionalTensorsAndSkipsTheRest) {
  auto index =
      Index("model.safetensors", SafetensorsFile({{"w.bf16", "BF16", {2, 3}, std::string(12, '\1')},
                                                  {"w.f16", "F16", {3, 2}, std::string(12, '\2')},
                                                  {"w.f32", "F32", {1, 4}, std::string(16, '\3')},
                                                  {"bias", "F32", {4}, std::string(16, '\4')},
                                                  {"ids", "I64", {2, 2}, std::string(32, '\5')}}));
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->tensors.size(), 3u);
  EXPECT_EQ(index->tensors[0].name, "model/w.bf16");
  EXPECT_EQ(index->tensors[0].dtype, WeightDType::kBF16);
  EXPECT_EQ(index->tensors[0].rows, 2);
  EXPECT_EQ(index->tensors[0].cols, 3);
  EXPECT_EQ(index->tensors[1].name, "model/w.f16");
  EXPECT_EQ(index->tensors[2].name, "model/w.f32");
  EXPECT_EQ(index->tensors[2].file_bytes(), 16);
  EXPECT_EQ(index->skipped.size(), 2u);
  auto strict = Index("model.safetensors",
                      SafetensorsFile({{"bias", "F32", {4}, std::string(16, '\4')}}), true);
  EXPECT_EQ(strict.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(strict.status().message().find("--weights_strict"), std::string::npos);
}

TEST_F(WeightFormatTest, HeaderLengthPastTheEndIsAnError) {
  std::string bytes = SafetensorsFile({{"w", "BF16", {1, 1}, "ab"}});
  bytes[0] = static_cast<char>(bytes[0] + 100);
  ExpectError(bytes, "runs past the end of the file");
}

TEST_F(WeightFormatTest, HugeHeaderLengthIsAnError) {
  std::string bytes(16, '\0');
  const uint64_t n = uint64_t{1} << 60;
  std::memcpy(bytes.data(), &n, 8);
  ExpectError(bytes, "above the limit");
  ExpectError(std::string(5, '\0'), "shorter than");
}

TEST_F(WeightFormatTest, OffsetsOutOfRangeAreAnError) {
  ExpectError(SafetensorsFileWithHeader(
                  R"({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [8, 16]}})",
                  std::string(8, 'x')),
              "run past");
  ExpectError(SafetensorsFileWithHeader(
                  R"({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [8, 1e300]}})",
                  std::string(8, 'x')),
              "data_offsets");
  ExpectError(SafetensorsFileWithHeader(
                  R"({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [-8, 0]}})",
                  std::string(8, 'x')),
              "data_offsets");
  ExpectError(SafetensorsFileWithHeader(
                  R"({"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [4, 0]}})",
                  std::string(8, 'x')),
              "begin <= end");
}

TEST_F(WeightFormatTest, OverlappingOffsetsAreAnError) {
  ExpectError(SafetensorsFileWithHeader(
                  R"({"a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]},
                      "b": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [4, 12]}})",
                  std::string(12, 'x')),
              "overlap");
}

TEST_F(WeightFormatTest, SizeNotMatchingTheShapeIsAnError) {
  ExpectError(SafetensorsFileWithHeader(
                  R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}})",
                  std::string(8, 'x')),
              "needs 16");
  ExpectError(SafetensorsFileWithHeader(
                  R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296],
                            "data_offsets": [0, 8]}})",
                  std::string(8, 'x')),
              "more than 2^63");
}

TEST_F(WeightFormatTest, UnknownDtypeIsSkippedOrStrictError) {
  const std::string bytes = SafetensorsFileWithHeader(
      R"({"w": {"dtype": "Q4_WEIRD", "shape": [2, 2], "data_offsets": [0, 8]},
          "v": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [8, 16]}})",
      std::string(16, 'x'));
  auto index = Index("odd.safetensors", bytes);
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->tensors.size(), 1u);
  EXPECT_EQ(index->tensors[0].name, "odd/v");
  ASSERT_EQ(index->skipped.size(), 1u);
  EXPECT_NE(index->skipped[0].find("unknown dtype 'Q4_WEIRD'"), std::string::npos);
  EXPECT_EQ(Index("odd.safetensors", bytes, true).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(WeightFormatTest, HeaderNotJsonIsAnError) {
  ExpectError(SafetensorsFileWithHeader("{not json", "xx"), "not a JSON object");
  ExpectError(SafetensorsFileWithHeader("[1, 2]", "xx"), "not a JSON object");
  ExpectError(SafetensorsFileWithHeader(R"({"w": 3})", "xx"), "tensor 'w'");
  ExpectError(SafetensorsFileWithHeader(R"({"w": {"dtype": "BF16", "shape": [1, 1]}})", "xx"),
              "data_offsets");
}

TEST_F(WeightFormatTest, IndexesNpyFiles) {
  const std::string path = folder_ + "/proj.npy";
  ASSERT_TRUE(WriteNpy(path, {2, 3}, {1, 2, 3, 4, 5, 6}).ok());
  auto index = IndexWeightFile(path, false);
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->tensors.size(), 1u);
  EXPECT_EQ(index->tensors[0].name, "proj");
  EXPECT_EQ(index->tensors[0].dtype, WeightDType::kF32);
  EXPECT_EQ(index->tensors[0].file_bytes(), 24);
  ASSERT_TRUE(WriteNpy(folder_ + "/vec.npy", {6}, {1, 2, 3, 4, 5, 6}).ok());
  auto vec = IndexWeightFile(folder_ + "/vec.npy", false);
  ASSERT_TRUE(vec.ok());
  EXPECT_TRUE(vec->tensors.empty());
  EXPECT_EQ(vec->skipped.size(), 1u);
  // A shape the data cannot fill.
  std::string bytes;
  {
    ASSERT_TRUE(WriteNpy(path, {2, 3}, {1, 2, 3, 4, 5, 6}).ok());
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto short_file = Index("short.npy", bytes.substr(0, bytes.size() - 4));
  EXPECT_EQ(short_file.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WeightConvertTest, RoundsToNearestEven) {
  const std::vector<float> f32 = {1.0f,
                                  1.00390625f,
                                  1.01171875f,
                                  -2.5f,
                                  1e-40f,
                                  std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN(),
                                  3.4e38f};
  std::string out(f32.size() * 2, '\0');
  ConvertToBf16(WeightDType::kF32, reinterpret_cast<const char*>(f32.data()), f32.size(),
                out.data());
  std::vector<uint16_t> got(f32.size());
  std::memcpy(got.data(), out.data(), out.size());
  EXPECT_EQ(got[0], 0x3f80);  // 1.0
  EXPECT_EQ(got[1], 0x3f80);  // 1 + 2^-8: a tie, rounds to the even 1.0
  EXPECT_EQ(got[2], 0x3f82);  // 1 + 3*2^-8: a tie, rounds up to the even 1 + 2^-6
  EXPECT_EQ(got[3], 0xc020);  // -2.5
  EXPECT_EQ(got[5], 0x7f80);  // +Inf
  EXPECT_TRUE(std::isnan(Bf16ToFloat(got[6])));
  EXPECT_EQ(got[7], 0x7f80);  // rounds past the largest finite BF16
  // FP16: 1.0, -2.0, the smallest subnormal 2^-24, 65504, -Inf, NaN.
  const std::vector<uint16_t> f16 = {0x3c00, 0xc000, 0x0001, 0x7bff, 0xfc00, 0x7e00};
  std::string out16(f16.size() * 2, '\0');
  ConvertToBf16(WeightDType::kF16, reinterpret_cast<const char*>(f16.data()), f16.size(),
                out16.data());
  std::vector<uint16_t> g16(f16.size());
  std::memcpy(g16.data(), out16.data(), out16.size());
  EXPECT_EQ(Bf16ToFloat(g16[0]), 1.0f);
  EXPECT_EQ(Bf16ToFloat(g16[1]), -2.0f);
  EXPECT_EQ(Bf16ToFloat(g16[2]), std::ldexp(1.0f, -24));
  EXPECT_EQ(g16[3], FloatToBf16(65504.0f));
  EXPECT_EQ(Bf16ToFloat(g16[4]), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Bf16ToFloat(g16[5])));
}

}  // namespace
}  // namespace gemm::core
