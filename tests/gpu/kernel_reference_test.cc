// cuBLASLt reference/fallback path and the public API's validation and dispatch, checked against
// a float64 CPU reference on fresh random data with poisoned outputs.
#include <cuda_runtime_api.h>

#include <random>
#include <tuple>
#include <vector>

#include "gemm/kernel.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace gemm::kernel {
namespace {

using testing::DeviceBuffer;

struct Case {
  int64_t m, n, k, batch;
  BLayout layout;
  DType dtype;
  float alpha, beta;
};

// Runs `c` through `kind` and compares each batch entry with the CPU reference.
void CheckAgainstCpu(const Case& c, KernelKind kind, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::size_t dsz = DTypeSize(c.dtype);
  const int64_t lda = testing::Pitch(c.k, 2);
  const int64_t ldb = testing::Pitch(c.layout == BLayout::kKN ? c.n : c.k, 2);
  const int64_t ldd = testing::Pitch(c.n, dsz);
  const int64_t b_rows = c.layout == BLayout::kKN ? c.k : c.n;
  const int64_t sa = c.m * lda, sb = b_rows * ldb, sd = c.m * ldd;
  auto ha = testing::RandomBf16(sa * c.batch, rng);
  auto hb = testing::RandomBf16(sb * c.batch, rng);
  auto hc16 = testing::RandomBf16(sd * c.batch, rng);
  std::vector<float> hc32(hc16.size());
  for (std::size_t i = 0; i < hc16.size(); ++i) hc32[i] = testing::Bf16ToFloat(hc16[i]);
  DeviceBuffer da(ha.size() * 2), db(hb.size() * 2), dc(sd * c.batch * dsz), dd(sd * c.batch * dsz);
  ASSERT_NE(dd.get(), nullptr);
  cudaMemcpy(da.get(), ha.data(), ha.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db.get(), hb.data(), hb.size() * 2, cudaMemcpyHostToDevice);
  if (c.dtype == DType::kBF16) {
    cudaMemcpy(dc.get(), hc16.data(), hc16.size() * 2, cudaMemcpyHostToDevice);
  } else {
    cudaMemcpy(dc.get(), hc32.data(), hc32.size() * 4, cudaMemcpyHostToDevice);
  }
  cudaMemset(dd.get(), 0xff, dd.bytes());  // NaN poison for both dtypes

  StridedBatch args;
  Problem& p = args.problem;
  p.m = c.m, p.n = c.n, p.k = c.k;
  p.a = da.get(), p.lda = lda, p.b = db.get(), p.ldb = ldb, p.b_layout = c.layout;
  p.c = c.beta != 0 ? dc.get() : nullptr, p.ldc = ldd;
  p.d = dd.get(), p.ldd = ldd, p.d_dtype = c.dtype, p.alpha = c.alpha, p.beta = c.beta;
  args.batch = c.batch, args.stride_a = sa, args.stride_b = sb, args.stride_c = sd,
  args.stride_d = sd;
  LaunchOptions opts;
  opts.kind = kind;
  const std::size_t ws = WorkspaceBytes(args, kind);
  DeviceBuffer work(ws);
  opts.workspace = ws ? work.get() : nullptr;
  opts.workspace_bytes = ws;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  absl::Status st = Gemm(args, stream, opts);
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  auto out = testing::ReadBack(dd.get(), sd * c.batch, c.dtype);
  for (int64_t e = 0; e < c.batch; ++e) {
    std::vector<uint16_t> a(ha.begin() + e * sa, ha.begin() + (e + 1) * sa);
    std::vector<uint16_t> b(hb.begin() + e * sb, hb.begin() + (e + 1) * sb);
    std::vector<double> cc(hc32.begin() + e * sd, hc32.begin() + (e + 1) * sd);
    auto ref = testing::CpuGemm(a, lda, b, ldb, c.layout, c.beta != 0 ? &cc : nullptr, ldd, c.m,
                                c.n, c.k, c.alpha, c.beta);
    std::vector<double> o(out.begin() + e * sd, out.begin() + (e + 1) * sd);
    const double err = testing::RelError(o, ldd, ref, c.n, c.m, c.n);
    const double tol = c.dtype == DType::kFP32 ? 1e-5 : 8e-3;
    EXPECT_LE(err, tol) << "M=" << c.m << " N=" << c.n << " K=" << c.k << " batch entry " << e
                        << " layout=" << static_cast<int>(c.layout)
                        << " dtype=" << static_cast<int>(c.dtype);
  }
}

class CublasLtVsCpu : public ::testing::TestWithParam<std::tuple<int, BLayout, DType>> {};

TEST_P(CublasLtVsCpu, MatchesFloat64) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no GPU";
  const int shape = std::get<0>(GetParam());
  static const int64_t kShapes[][3] = {{1, 1, 1},    {7, 64, 129},   {127, 128, 7},
                                       {129, 7, 64}, {64, 129, 127}, {200, 136, 256}};
  Case c{kShapes[shape][0],
         kShapes[shape][1],
         kShapes[shape][2],
         1,
         std::get<1>(GetParam()),
         std::get<2>(GetParam()),
         1.0f,
         0.0f};
  CheckAgainstCpu(c, KernelKind::kCublasLt, 1234 + shape);
  c.alpha = 0.5f, c.beta = -1.25f, c.batch = 3;
  CheckAgainstCpu(c, KernelKind::kCublasLt, 99 + shape);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CublasLtVsCpu,
                         ::testing::Combine(::testing::Range(0, 6),
                                            ::testing::Values(BLayout::kKN, BLayout::kNK),
                                            ::testing::Values(DType::kBF16, DType::kFP32)));

TEST(KernelApi, AutoMatchesFloat64) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no GPU";
  CheckAgainstCpu({129, 200, 72, 2, BLayout::kNK, DType::kBF16, 1.0f, 0.0f}, KernelKind::kAuto, 7);
  CheckAgainstCpu({129, 200, 72, 1, BLayout::kKN, DType::kFP32, 2.0f, 0.5f}, KernelKind::kAuto, 8);
}

TEST(KernelApi, SelectKernelIsExact) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no GPU";
  auto kind = SelectKernel(0);
  ASSERT_TRUE(kind.ok()) << kind.status();
  const int cc = testing::ComputeCapability();
  const KernelKind want = cc == 90    ? KernelKind::kSm90
                          : cc == 100 ? KernelKind::kSm100
                                      : KernelKind::kCublasLt;
  EXPECT_EQ(*kind, want);
  EXPECT_EQ(KernelName(KernelKind::kSm90), "sm90_wgmma");
}

TEST(KernelApi, RejectsBadArguments) {
  int dummy[64];
  StridedBatch args;
  Problem& p = args.problem;
  p.m = 4, p.n = 8, p.k = 8, p.a = dummy, p.b = dummy, p.d = dummy;
  p.lda = 8, p.ldb = 8, p.ldd = 8;
  auto expect_invalid = [&](const char* what) {
    absl::Status st = Gemm(args, nullptr, {});
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << what << ": " << st;
    st = Prepare(args).status();  // the same checks, before anything is enqueued
    EXPECT_TRUE(absl::IsInvalidArgument(st)) << what << " (Prepare): " << st;
  };
  p.m = 0;
  expect_invalid("m=0");
  p.m = 4, p.lda = 4;
  expect_invalid("lda<k");
  p.lda = 8, p.ldd = 2;
  expect_invalid("ldd<n");
  p.ldd = 8, p.beta = 1.0f;
  expect_invalid("beta without C");
  p.beta = 0.0f, p.b = nullptr;
  expect_invalid("null B");
  p.b = dummy, args.batch = 0;
  expect_invalid("batch=0");
  args.batch = 2, args.stride_d = 1;
  expect_invalid("overlapping D");
  args.batch = 1;
  Problem q = p;
  q.d_dtype = DType::kFP32;
  std::vector<Problem> group{p, q};
  EXPECT_TRUE(absl::IsInvalidArgument(GemmGrouped(group, nullptr, {})));
}

}  // namespace
}  // namespace gemm::kernel
