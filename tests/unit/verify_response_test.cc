// gemm_client --verify: the cblas_dgemm reference equals the float64 loop of
// gemm::ReferenceGemm, and a response that is wrong, NaN or the wrong size does not pass.
#include "client/verify_response.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/random/random.h"
#include "common/bf16.h"
#include "common/reference_gemm.h"

namespace gemm::client {
namespace {

TEST(VerifyResponseTest, BlasReferenceMatchesTheFloat64Loop) {
  absl::BitGen gen;
  struct Case {
    int64_t m, n, k;
    bool nk;
    double alpha, beta;
  };
  for (const Case& c :
       {Case{1, 1, 1, false, 1, 0}, Case{33, 17, 65, false, 1.5, 0.5}, Case{8, 40, 24, true, -2, 1},
        Case{5, 3, 0, false, 1, 2}, Case{0, 4, 4, true, 1, 0}, Case{64, 64, 64, true, 1, 0}}) {
    const std::string a = RandomBf16Bytes(c.m * c.k, gen);
    const std::string b = RandomBf16Bytes(c.k * c.n, gen);
    std::vector<float> addend;
    if (c.beta != 0) {
      for (int64_t i = 0; i < c.m * c.n; ++i) addend.push_back(absl::Uniform(gen, -1.0f, 1.0f));
    }
    const RefProblem p{c.m, c.n, c.k, c.nk, c.alpha, c.beta};
    const std::vector<double> want = ReferenceGemm(p, a, b, addend);
    const std::vector<double> got = BlasReferenceGemm(p, a, b, addend);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::fabs(want[i])))
          << c.m << "x" << c.n << "x" << c.k << " at " << i;
    }
  }
}

// One problem, its operands and the response holding `d` as FP32.
struct Fixture {
  ProblemOperands op;
  v1::GemmResponse response;
};

Fixture MakeFixture(int64_t m, int64_t n, int64_t k) {
  absl::BitGen gen;
  Fixture f;
  f.op = {
      .m = m, .n = n, .k = k, .a = RandomBf16Bytes(m * k, gen), .b = RandomBf16Bytes(k * n, gen)};
  const std::vector<double> ref = ReferenceGemm({m, n, k}, f.op.a, f.op.b);
  std::vector<float> d(ref.begin(), ref.end());
  f.response.add_outputs()->set_data(
      std::string(reinterpret_cast<const char*>(d.data()), d.size() * sizeof(float)));
  return f;
}

TEST(VerifyResponseTest, ExactAnswerPassesWrongOrNanAnswerDoesNot) {
  Fixture f = MakeFixture(9, 7, 13);
  const VerifyOptions fp32{.out_fp32 = true};
  auto err = WorstRelativeError({f.op}, fp32, f.response);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-6);

  std::string& data = *f.response.mutable_outputs(0)->mutable_data();
  float x;
  std::memcpy(&x, data.data(), 4);
  x += 10;
  std::memcpy(data.data(), &x, 4);
  err = WorstRelativeError({f.op}, fp32, f.response);
  ASSERT_TRUE(err.ok());
  EXPECT_GT(*err, 1e-2);

  x = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(data.data(), &x, 4);
  err = WorstRelativeError({f.op}, fp32, f.response);
  ASSERT_TRUE(err.ok());
  EXPECT_FALSE(*err <= 1.0);  // NaN never passes a tolerance
}

TEST(VerifyResponseTest, WrongOutputCountOrSizeIsAnError) {
  Fixture f = MakeFixture(4, 4, 4);
  const VerifyOptions fp32{.out_fp32 = true};
  EXPECT_EQ(WorstRelativeError({f.op, f.op}, fp32, f.response).status().code(),
            absl::StatusCode::kInternal);
  f.response.mutable_outputs(0)->mutable_data()->resize(8);
  EXPECT_EQ(WorstRelativeError({f.op}, fp32, f.response).status().code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace gemm::client
