// CPU GEMM (OpenBLAS + BF16 rounding) against the float64 reference on odd shapes, both
// layouts, both output dtypes, alpha/beta.
#include "server/cpu/cpu_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "common/bf16.h"
#include "common/reference_gemm.h"

namespace gemm::cpu {
namespace {

struct Shape {
  int64_t m, n, k;
};

TEST(CpuGemmTest, MatchesFloat64Reference) {
  absl::BitGen gen;
  const Shape shapes[] = {{1, 1, 1}, {17, 33, 65}, {1, 4096, 1}, {64, 1, 300}, {129, 7, 127}};
  for (const Shape& s : shapes) {
    for (bool nk : {false, true}) {
      for (bool fp32 : {false, true}) {
        for (float beta : {0.0f, 0.75f}) {
          SCOPED_TRACE(absl::StrCat(s.m, "x", s.n, "x", s.k, nk ? " nk" : " kn",
                                    fp32 ? " fp32" : " bf16", " beta=", beta));
          const std::string a = RandomBf16Bytes(s.m * s.k, gen);
          const std::string b = RandomBf16Bytes(s.k * s.n, gen);
          std::string c;
          std::vector<float> c_float;
          if (beta != 0.0f) {
            c = RandomBf16Bytes(s.m * s.n, gen);
            c_float = DecodeOutput(c, false);
            if (fp32) c.assign(reinterpret_cast<const char*>(c_float.data()), c_float.size() * 4);
          }
          core::Problem p{.m = s.m,
                          .n = s.n,
                          .k = s.k,
                          .a = a,
                          .b = b,
                          .b_layout = nk ? core::BLayout::kNK : core::BLayout::kKN,
                          .alpha = 1.5f,
                          .beta = beta,
                          .c = c,
                          .out_dtype = fp32 ? core::DType::kFP32 : core::DType::kBF16};
          std::vector<float> b_float(s.k * s.n);
          DecodeBf16(b, b_float.data());
          std::string out(s.m * s.n * (fp32 ? 4 : 2), '\x7f');  // poisoned (NaN pattern)
          CpuGemm(p, 0, b_float.data(), out.data());
          const auto ref = ReferenceGemm({s.m, s.n, s.k, nk, 1.5, beta}, a, b, c_float);
          const double err = RelativeError(DecodeOutput(out, fp32), ref);
          EXPECT_LE(err, fp32 ? 1e-5 : 8e-3);
        }
      }
    }
  }
}

TEST(CpuGemmTest, NanInputPropagatesAndFailsComparison) {
  std::string a = FloatsToBf16Bytes(std::vector<float>{NAN, 1.0f});
  std::string b = FloatsToBf16Bytes(std::vector<float>{1.0f, 1.0f});
  core::Problem p{.m = 1, .n = 1, .k = 2, .a = a, .b = b};
  std::vector<float> bf{1.0f, 1.0f};
  std::string out(2, '\0');
  CpuGemm(p, 0, bf.data(), out.data());
  EXPECT_TRUE(std::isnan(DecodeOutput(out, false)[0]));
  EXPECT_TRUE(std::isinf(RelativeError(DecodeOutput(out, false), {2.0})));
}

// `bytes` cut into pieces of 1, 2, 3, ... bytes (cuts inside elements and rows).
std::vector<absl::string_view> Cut(const std::string& bytes) {
  std::vector<absl::string_view> pieces;
  for (size_t at = 0, len = 1; at < bytes.size(); at += len, ++len) {
    pieces.push_back(absl::string_view(bytes).substr(at, len));
  }
  return pieces;
}

TEST(CpuGemmTest, OperandsInPiecesGiveTheSameBytes) {
  absl::BitGen gen;
  const int64_t m = 5, n = 7, k = 9, count = 3;
  const std::string a = RandomBf16Bytes(count * m * k, gen);
  const std::string b = RandomBf16Bytes(k * n, gen);
  const std::string c = RandomBf16Bytes(count * m * n, gen);
  const std::vector<absl::string_view> a_pieces = Cut(a), c_pieces = Cut(c);
  core::Problem flat{.m = m, .n = n, .k = k, .count = count, .a = a, .b = b, .beta = 0.5f, .c = c};
  core::Problem pieces = flat;
  pieces.a = core::OperandBytes::Pieces(a_pieces);
  pieces.c = core::OperandBytes::Pieces(c_pieces);
  ASSERT_FALSE(pieces.a.contiguous());
  std::vector<float> b_float(k * n);
  DecodeBf16(b, b_float.data());
  for (int64_t e = 0; e < count; ++e) {
    std::string want(m * n * 2, '\0'), got(m * n * 2, '\x7f');
    EXPECT_FALSE(CpuGemm(flat, e, b_float.data(), want.data()).has_value());
    EXPECT_FALSE(CpuGemm(pieces, e, b_float.data(), got.data()).has_value());
    EXPECT_EQ(got, want) << "entry " << e;
  }
}

}  // namespace
}  // namespace gemm::cpu
