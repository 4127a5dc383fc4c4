// GPU tests of the SM90 small-M (decode) kernel against cuBLAS (BF16 inputs, FP32 compute and
// output) on random inputs: shape sweep over both B layouts and both output dtypes, alpha/beta
// with C, padded pitches, strided batch, forced split-K factors and run-to-run determinism.
// Outputs are poisoned (NaN bit pattern) before each run; padding must stay poisoned.
// Skips when no compute-capability-9.x GPU is present.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gemm/kernel.h"
#include "sm90/small_m_gemm.h"

namespace gemm::kernel::sm90 {
namespace {

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr
#define CUBLAS_OK(expr) ASSERT_EQ((expr), CUBLAS_STATUS_SUCCESS) << #expr

int64_t Round8(int64_t x) { return (x + 7) / 8 * 8; }

float Bf16ToFloat(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Device pools of random data reused, at random offsets, as operands: every case sees fresh
// values without a fill kernel.
class SmallMTest : public ::testing::Test {
 protected:
  static constexpr int64_t kPoolElems = int64_t{80} << 20;  // BF16 values in [-1, 1)
  static constexpr int64_t kF32Elems = int64_t{4} << 20;    // FP32 values for C
  static constexpr std::size_t kWsBytes = std::size_t{256} << 20;
  static constexpr std::size_t kOutBytes = std::size_t{64} << 20;

  static void SetUpTestSuite() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return;
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || prop.major != 9) return;
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<__nv_bfloat16> h(kPoolElems);
    for (auto& x : h) x = __float2bfloat16(u(rng));
    std::vector<float> hf(kF32Elems);
    for (auto& x : hf) x = u(rng);
    if (cudaMalloc(&pool_, kPoolElems * 2) != cudaSuccess ||
        cudaMalloc(&pool_f32_, kF32Elems * 4) != cudaSuccess ||
        cudaMalloc(&ws_, kWsBytes) != cudaSuccess || cudaMalloc(&d_, kOutBytes) != cudaSuccess ||
        cudaMalloc(&ref_, kOutBytes) != cudaSuccess)
      return;
    cudaMemcpy(pool_, h.data(), kPoolElems * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(pool_f32_, hf.data(), kF32Elems * 4, cudaMemcpyHostToDevice);
    if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS) return;
    ready_ = true;
  }

  static void TearDownTestSuite() {
    if (cublas_) cublasDestroy(cublas_);
    cudaFree(pool_);
    cudaFree(pool_f32_);
    cudaFree(ws_);
    cudaFree(d_);
    cudaFree(ref_);
  }

  void SetUp() override {
    if (!ready_) GTEST_SKIP() << "no compute capability 9.x GPU";
  }

  // A random 16-byte aligned slice of `elems` BF16 values of the pool.
  const __nv_bfloat16* Slice(int64_t elems) {
    std::uniform_int_distribution<int64_t> off(0, (kPoolElems - elems) / 8);
    return static_cast<const __nv_bfloat16*>(pool_) + off(rng_) * 8;
  }

  struct Case {
    int64_t m, n, k;
    BLayout layout;
    DType dtype;
    float alpha = 1.f, beta = 0.f;
    int64_t pad = 0;  // extra elements per row of every operand
    int64_t batch = 1;
    int64_t force_ctas = 0;    // grid size override; 0: the heuristic's plan
    bool stream_k = false;     // the stream-K plan even where the dispatch's plan is tile-aligned
    int expect_cluster_k = 0;  // > 0: the plan must use clusters of this many CTAs (1: none)
  };

  // Runs `c` through the small-M kernel and cuBLAS; returns the relative Frobenius error and
  // fails on NaN, unwritten elements, written padding or element-wise mismatch. Optionally
  // returns our raw output.
  void RunCase(const Case& c, std::vector<uint8_t>* raw_out = nullptr) {
    SCOPED_TRACE(::testing::Message()
                 << "M=" << c.m << " N=" << c.n << " K=" << c.k
                 << " layout=" << (c.layout == BLayout::kNK ? "NK" : "KN")
                 << " dtype=" << (c.dtype == DType::kBF16 ? "bf16" : "f32") << " alpha=" << c.alpha
                 << " beta=" << c.beta << " pad=" << c.pad << " batch=" << c.batch
                 << " ctas=" << c.force_ctas << " stream_k=" << c.stream_k);
    const std::size_t es = DTypeSize(c.dtype);
    const int64_t lda = Round8(c.k) + c.pad;
    const int64_t ldb = (c.layout == BLayout::kNK ? Round8(c.k) : Round8(c.n)) + c.pad;
    const int64_t ldd = Round8(c.n) + c.pad;
    const int64_t a_elems = c.m * lda, b_elems = (c.layout == BLayout::kNK ? c.n : c.k) * ldb;
    const int64_t d_elems = c.m * ldd;
    ASSERT_LE(static_cast<std::size_t>(d_elems * c.batch) * 4, kOutBytes);

    StridedBatch args;
    Problem& p = args.problem;
    p.m = c.m;
    p.n = c.n;
    p.k = c.k;
    p.b_layout = c.layout;
    p.d_dtype = c.dtype;
    p.alpha = c.alpha;
    p.beta = c.beta;
    p.lda = lda;
    p.ldb = ldb;
    p.ldc = ldd;
    p.ldd = ldd;
    args.batch = c.batch;
    args.stride_a = a_elems;
    args.stride_b = b_elems;
    args.stride_c = d_elems;
    args.stride_d = d_elems;
    p.a = Slice(a_elems * c.batch);
    p.b = Slice(b_elems * c.batch);
    if (c.dtype == DType::kBF16) {
      p.c = Slice(d_elems * c.batch);
    } else {
      ASSERT_LE(d_elems * c.batch, kF32Elems);
      p.c = pool_f32_;
    }
    p.d = d_;

    // Reference: P = A · op(B) in FP32 through cuBLAS (column-major view: P^T = op(B)^T A^T).
    const int64_t ldp = Round8(c.n);
    const float one = 1.f, zero = 0.f;
    CUBLAS_OK(cublasGemmStridedBatchedEx(
        cublas_, c.layout == BLayout::kNK ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, c.n, c.m, c.k,
        &one, p.b, CUDA_R_16BF, ldb, b_elems, p.a, CUDA_R_16BF, lda, a_elems, &zero, ref_,
        CUDA_R_32F, ldp, c.m * ldp, c.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));

    CUDA_OK(cudaMemset(d_, 0xFF, d_elems * c.batch * es));  // NaN in BF16 and FP32
    int sms = 0;
    CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    // The dispatch's plan (SmallMGemm): with the device's cluster limits.
    const absl::StatusOr<SmallMClusterLimits> limits = QuerySmallMClusterLimits();
    ASSERT_TRUE(limits.ok()) << limits.status();
    const SmallMPlan plan = PlanSmallM(args, sms, c.force_ctas, c.stream_k ? nullptr : &*limits);
    if (c.expect_cluster_k > 0) {
      ASSERT_EQ(plan.cluster_k, c.expect_cluster_k) << "ctas " << plan.ctas;
      ASSERT_FALSE(plan.split_tiles);
    }
    ASSERT_LE(plan.workspace_bytes, kWsBytes);
    if (c.force_ctas == 0) ASSERT_LE(plan.workspace_bytes, SmallMWorkspaceBytes(args, sms));
    absl::Status st = SmallMGemmWithPlan(args, plan, nullptr, ws_, kWsBytes);
    ASSERT_TRUE(st.ok()) << st;
    CUDA_OK(cudaDeviceSynchronize());

    std::vector<uint8_t> out(d_elems * c.batch * es);
    std::vector<float> ref(c.m * ldp * c.batch);
    std::vector<uint8_t> cin(d_elems * c.batch * es);
    CUDA_OK(cudaMemcpy(out.data(), d_, out.size(), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(ref.data(), ref_, ref.size() * 4, cudaMemcpyDeviceToHost));
    if (c.beta != 0.f) CUDA_OK(cudaMemcpy(cin.data(), p.c, cin.size(), cudaMemcpyDeviceToHost));
    auto value = [&](const std::vector<uint8_t>& v, int64_t i) {
      if (es == 2) {
        uint16_t h;
        std::memcpy(&h, &v[i * 2], 2);
        return Bf16ToFloat(h);
      }
      float f;
      std::memcpy(&f, &v[i * 4], 4);
      return f;
    };
    double err2 = 0, ref2 = 0;
    std::vector<double> expect(c.m * c.n * c.batch);
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double r = c.alpha * static_cast<double>(ref[(b * c.m + i) * ldp + j]);
          if (c.beta != 0.f)
            r += c.beta * static_cast<double>(value(cin, b * d_elems + i * ldd + j));
          expect[(b * c.m + i) * c.n + j] = r;
          ref2 += r * r;
        }
    const double rms = std::sqrt(ref2 / std::max<double>(1, expect.size()));
    const double rtol = es == 2 ? 1.2e-2 : 1e-4;
    int64_t bad = 0, nan = 0, pad_written = 0;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < ldd; ++j) {
          const int64_t idx = b * d_elems + i * ldd + j;
          if (j >= c.n) {
            for (std::size_t q = 0; q < es; ++q) pad_written += out[idx * es + q] != 0xFF;
            continue;
          }
          const double got = value(out, idx), r = expect[(b * c.m + i) * c.n + j];
          if (std::isnan(got)) {
            ++nan;
            continue;
          }
          const double e = got - r;
          err2 += e * e;
          if (std::abs(e) > rtol * (std::abs(r) + rms) + 1e-6) {
            if (bad < 5)
              ADD_FAILURE() << "mismatch at b=" << b << " m=" << i << " n=" << j << ": got " << got
                            << " want " << r;
            ++bad;
          }
        }
    EXPECT_EQ(nan, 0) << "NaN / unwritten outputs";
    EXPECT_EQ(bad, 0);
    EXPECT_EQ(pad_written, 0) << "bytes written into the row padding of D";
    // NOTE: with few outputs (N = 1) the reference can be a nearly cancelling dot product,
    // whose relative error between two right FP32 summation orders is large (seen on H200:
    // 1.2e-4 at M=1, N=1, K=8192): the norm is floored at a tenth of the expected size of such
    // a sum (inputs uniform in [-1, 1): sqrt(K / 9) per output). Wrong results stay far above.
    const double typical2 =
        static_cast<double>(expect.size()) * static_cast<double>(c.k) / 9.0 * c.alpha * c.alpha;
    const double rel = std::sqrt(err2 / std::max({ref2, 0.01 * typical2, 1e-30}));
    EXPECT_LT(rel, es == 2 ? 5e-3 : 2e-5) << "relative Frobenius error";
    if (raw_out) *raw_out = std::move(out);
  }

  static inline bool ready_ = false;
  static inline void* pool_ = nullptr;
  static inline void* pool_f32_ = nullptr;
  static inline void* ws_ = nullptr;
  static inline void* d_ = nullptr;
  static inline void* ref_ = nullptr;
  static inline cublasHandle_t cublas_ = nullptr;
  std::mt19937_64 rng_{std::random_device{}()};
};

constexpr int64_t kMs[] = {1, 7, 16, 64, 127, 128};
constexpr int64_t kNKs[] = {1, 7, 64, 129, 1000, 4096, 8192};

#define SMALL_M_SWEEP(name, layout, dtype) \
  TEST_F(SmallMTest, name) {               \
    int i = 0;                             \
    for (int64_t m : kMs)                  \
      for (int64_t n : kNKs)               \
        for (int64_t k : kNKs) {           \
          Case c{m, n, k, layout, dtype};  \
          if (i % 2 == 1) {                \
            c.alpha = 0.75f;               \
            c.beta = -0.5f;                \
          }                                \
          if (i % 3 == 0) c.pad = 8;       \
          ++i;                             \
          RunCase(c);                      \
          if (HasFailure()) return;        \
        }                                  \
  }

SMALL_M_SWEEP(SweepNkBf16, BLayout::kNK, DType::kBF16)
SMALL_M_SWEEP(SweepNkF32, BLayout::kNK, DType::kFP32)
SMALL_M_SWEEP(SweepKnBf16, BLayout::kKN, DType::kBF16)
SMALL_M_SWEEP(SweepKnF32, BLayout::kKN, DType::kFP32)

TEST_F(SmallMTest, ForcedGridSizes) {
  // Grid sizes that split tiles unevenly (stream-K partials + fixup) and that don't.
  for (BLayout layout : {BLayout::kNK, BLayout::kKN})
    for (int64_t ctas : {1, 3, 8, 47, 132, 264, 376})
      for (int64_t m : {3, 40, 100}) {
        Case c{m, 1000, 3000, layout, DType::kFP32, 1.5f, 0.25f};
        c.force_ctas = ctas;
        RunCase(c);
        if (HasFailure()) return;
      }
}

TEST_F(SmallMTest, ClusterSplitK) {
  // Grids of tiles x cluster size that fill the SMs: clusters of 2, 4 and 8 split each tile's K
  // and add through distributed shared memory; 1: one whole tile per CTA. N is chosen for this
  // GPU's SM count; the last case of each size cuts the final tile (N not a multiple of 128).
  int sms = 0;
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const absl::StatusOr<SmallMClusterLimits> limits = QuerySmallMClusterLimits();
  ASSERT_TRUE(limits.ok()) << limits.status();
  int i = 0;
  for (int cs : {1, 2, 4, 8}) {
    const int64_t tiles = sms / cs;
    if (tiles * cs * 20 < int64_t{sms} * 19) continue;  // does not fill the SMs here
    // Clusters that do not all fit at once leave the plan on stream-K (checked, still run).
    const int expect = cs == 1 || limits->For(cs) >= tiles ? cs : 0;
    struct Dims {
      int64_t n, k, batch;
    };
    const Dims dims[] = {{tiles * 128, 64 * 4 * cs + 64 * 3, 1},
                         {tiles * 128, cs == 1 ? 4096 : 8192, 1},  // B fits the test's pool
                         {tiles / 2 * 128, 4096, 2},
                         {tiles * 128 - 37, 2100 * cs, 1}};
    for (const Dims& d : dims) {
      if (d.batch * ((d.n + 127) / 128) != tiles) continue;  // odd tile count: no even split
      for (BLayout layout : {BLayout::kNK, BLayout::kKN})
        for (DType dtype : {DType::kBF16, DType::kFP32})
          for (int64_t m : {1, 7, 16}) {
            Case c{m, d.n, d.k, layout, dtype};
            c.batch = d.batch;
            c.expect_cluster_k = expect;
            if (i % 2 == 1) {
              c.alpha = 0.75f;
              c.beta = -0.5f;
            }
            if (i % 3 == 0) c.pad = 8;
            ++i;
            RunCase(c);
            if (HasFailure()) return;
          }
    }
  }
  EXPECT_GT(i, 0) << "no shape filled " << sms << " SMs";
}

TEST_F(SmallMTest, ClusterSplitKDeterministic) {
  int sms = 0;
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  Case c{16, sms / 2 * 128, 8192, BLayout::kNK, DType::kFP32};
  std::vector<uint8_t> first, second;
  rng_.seed(7);
  RunCase(c, &first);
  rng_.seed(7);
  RunCase(c, &second);
  EXPECT_TRUE(first == second) << "cluster split-K result differs between identical runs";
}

TEST_F(SmallMTest, StridedBatch) {
  for (BLayout layout : {BLayout::kNK, BLayout::kKN})
    for (DType dtype : {DType::kBF16, DType::kFP32}) {
      Case c{5, 1000, 4096, layout, dtype, 1.f, 0.5f};
      c.batch = 3;
      RunCase(c);
      c.force_ctas = 100;  // tiles shared across batch entries
      RunCase(c);
      c = Case{128, 257, 520, layout, dtype};
      c.batch = 4;
      c.pad = 8;
      RunCase(c);
      if (HasFailure()) return;
    }
}

TEST_F(SmallMTest, DeterministicAcrossRuns) {
  Case c{16, 4096, 8192, BLayout::kNK, DType::kFP32};
  c.force_ctas = 77;
  std::vector<uint8_t> first, second;
  RunCase(c, &first);
  // Same operands again: RunCase draws new slices, so fix the seed to repeat them.
  rng_.seed(42);
  RunCase(c, &first);
  rng_.seed(42);
  RunCase(c, &second);
  EXPECT_TRUE(first == second) << "split-K result differs between identical runs";
}

TEST_F(SmallMTest, NoWorkspaceFallsBackToWholeTiles) {
  StridedBatch args;
  Problem& p = args.problem;
  p.m = 9;
  p.n = 700;
  p.k = 5000;
  p.lda = p.ldb = 5000;
  p.ldd = 700;
  // NOTE: B is [N,K] (700 x 5000, pitch 5000): the slice holds exactly that. With the default
  // [K,N] layout and this pitch the kernel read 5000 x 5000 elements, past the slice and, for a
  // slice near the end of the pool, past the allocation (seen on H200: inf in both outputs).
  p.b_layout = BLayout::kNK;
  p.a = Slice(9 * 5000);
  p.b = Slice(700 * 5000);
  p.d = d_;
  p.d_dtype = DType::kFP32;
  int sms = 0;
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  ASSERT_GT(SmallMWorkspaceBytes(args, sms), 0u);
  std::vector<float> with_ws(9 * 700), without(9 * 700);
  ASSERT_TRUE(SmallMGemm(args, nullptr, {.workspace = ws_, .workspace_bytes = kWsBytes}).ok());
  CUDA_OK(cudaMemcpy(with_ws.data(), d_, with_ws.size() * 4, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemset(d_, 0xFF, without.size() * 4));
  ASSERT_TRUE(SmallMGemm(args, nullptr, {}).ok());
  CUDA_OK(cudaMemcpy(without.data(), d_, without.size() * 4, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < with_ws.size(); ++i) {
    ASSERT_FALSE(std::isnan(without[i])) << i;
    ASSERT_NEAR(with_ws[i], without[i], 1e-3f * (1.f + std::abs(with_ws[i]))) << i;
  }
}

TEST_F(SmallMTest, RejectsBadArguments) {
  StridedBatch args;
  args.problem.m = 129;
  args.problem.n = 64;
  args.problem.k = 64;
  args.problem.a = args.problem.b = pool_;
  args.problem.d = d_;
  args.problem.lda = args.problem.ldb = args.problem.ldd = 64;
  EXPECT_EQ(SmallMGemm(args, nullptr, {}).code(), absl::StatusCode::kInvalidArgument);
  args.problem.m = 8;
  args.problem.lda = 65;
  EXPECT_EQ(SmallMGemm(args, nullptr, {}).code(), absl::StatusCode::kInvalidArgument);
  args.problem.lda = 64;
  args.problem.beta = 1.f;  // no C
  EXPECT_EQ(SmallMGemm(args, nullptr, {}).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gemm::kernel::sm90
