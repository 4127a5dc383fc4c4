// SM90 persistent WGMMA kernel against cuBLASLt on fresh random data with poisoned outputs:
// M, N, K sweeps over {1, 7, 64, 127, 128, 129, 1000, 4096}, benchmark shapes, both B layouts,
// both output dtypes, alpha/beta with C, strided batches and groups, prepared calls. Skips unless
// the device is compute capability 9.0.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gemm/kernel.h"
#include "gemm/qualification.h"
#include "gtest/gtest.h"
#include "kernel_test_device.h"
#include "kernel_test_util.h"
#include "sm90/sm90_gemm.h"
#include "sm90/sm90_split.h"

namespace gemm::kernel {
namespace {

using testing::DeviceBuffer;

bool IsSm90() { return testing::HaveGpu() && testing::ComputeCapability() == 90; }

uint64_t FreshSeed() {
  static std::mt19937_64 rng(std::random_device{}());
  return rng();
}

struct Case {
  int64_t m, n, k, batch = 1;
  BLayout layout = BLayout::kNK;
  DType dtype = DType::kBF16;
  float alpha = 1.0f, beta = 0.0f;
};

std::string Name(const Case& c) {
  return absl::StrCat("M=", c.m, " N=", c.n, " K=", c.k, " batch=", c.batch,
                      c.layout == BLayout::kKN ? " B[K,N]" : " B[N,K]",
                      c.dtype == DType::kBF16 ? " bf16" : " fp32", " alpha=", c.alpha,
                      " beta=", c.beta);
}

double Tolerance(DType t) { return t == DType::kFP32 ? 1e-5 : 8e-3; }

// Operands of one strided batch on the device, filled with fresh random values.
struct Operands {
  int64_t lda, ldb, ldd, sa, sb, sd;
  std::unique_ptr<DeviceBuffer> a, b, c, d, ref;

  explicit Operands(const Case& cs) {
    const std::size_t dsz = DTypeSize(cs.dtype);
    lda = testing::Pitch(cs.k, 2);
    ldb = testing::Pitch(cs.layout == BLayout::kKN ? cs.n : cs.k, 2);
    ldd = testing::Pitch(cs.n, dsz);
    sa = cs.m * lda, sb = (cs.layout == BLayout::kKN ? cs.k : cs.n) * ldb, sd = cs.m * ldd;
    a = std::make_unique<DeviceBuffer>(sa * cs.batch * 2);
    b = std::make_unique<DeviceBuffer>(sb * cs.batch * 2);
    c = std::make_unique<DeviceBuffer>(sd * cs.batch * dsz);
    d = std::make_unique<DeviceBuffer>(sd * cs.batch * dsz);
    ref = std::make_unique<DeviceBuffer>(sd * cs.batch * dsz);
    testing::FillRandom(a->get(), sa * cs.batch, DType::kBF16, FreshSeed());
    testing::FillRandom(b->get(), sb * cs.batch, DType::kBF16, FreshSeed());
    testing::FillRandom(c->get(), sd * cs.batch, cs.dtype, FreshSeed());
    cudaMemset(d->get(), 0xff, d->bytes());  // NaN poison in both dtypes
    cudaMemset(ref->get(), 0xff, ref->bytes());
  }

  StridedBatch Args(const Case& cs, void* out) const {
    StridedBatch args;
    Problem& p = args.problem;
    p.m = cs.m, p.n = cs.n, p.k = cs.k;
    p.a = a->get(), p.lda = lda, p.b = b->get(), p.ldb = ldb, p.b_layout = cs.layout;
    p.c = cs.beta != 0 ? c->get() : nullptr, p.ldc = ldd;
    p.d = out, p.ldd = ldd, p.d_dtype = cs.dtype, p.alpha = cs.alpha, p.beta = cs.beta;
    args.batch = cs.batch, args.stride_a = sa, args.stride_b = sb, args.stride_c = sd,
    args.stride_d = sd;
    return args;
  }
};

absl::Status RunKind(const StridedBatch& args, KernelKind kind) {
  LaunchOptions opts;
  opts.kind = kind;
  const std::size_t ws = WorkspaceBytes(args, kind);
  DeviceBuffer work(ws);
  opts.workspace = ws ? work.get() : nullptr;
  opts.workspace_bytes = ws;
  absl::Status st = Gemm(args, nullptr, opts);
  if (!st.ok()) return st;
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) return absl::InternalError(cudaGetErrorString(err));
  return absl::OkStatus();
}

// The error that decides an FP32-output check whose result differs from cuBLASLt's by more
// than the tolerance (`err`, finite): both are FP32 accumulations of the same products in
// different orders, so the exact float64 product decides. Ours passes (the returned error is
// then within the tolerance) if it is within the tolerance of the exact result, or no further
// from it than cuBLASLt is. With only a few outputs (`m * n < 64`), where one ill-conditioned dot
// product can dominate, an error within the tolerance of the terms' magnitude also passes.
// Anything else returns `err` after logging the float64 errors of both. Batch 1 only, and only
// up to 2^31 multiply-adds (the host reference's cost); larger cases return `err`.
// NOTE: seen on H200: M=N=1, K=4096, 1.1e-5 between us and cuBLASLt; M=N=1, K=1000, 4.8e-5 of
// the exact value whose terms summed to far more; on H100: a group member
// M=1, N=4096, K=14336, 1.011e-5 between us and cuBLASLt.
double Float64Verdict(const Operands& ops, const Case& cs, double err) {
  if (cs.dtype != DType::kFP32 || cs.batch != 1 || !std::isfinite(err) ||
      err <= Tolerance(cs.dtype) || cs.m * cs.n * cs.k > (int64_t{1} << 31)) {
    return err;
  }
  std::vector<uint16_t> a(ops.sa), b(ops.sb);
  cudaMemcpy(a.data(), ops.a->get(), a.size() * 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(b.data(), ops.b->get(), b.size() * 2, cudaMemcpyDeviceToHost);
  std::vector<double> c = testing::ReadBack(ops.c->get(), ops.sd, cs.dtype);
  const std::vector<double> exact =
      testing::CpuGemm(a, ops.lda, b, ops.ldb, cs.layout, cs.beta != 0 ? &c : nullptr, ops.ldd,
                       cs.m, cs.n, cs.k, cs.alpha, cs.beta);
  const std::vector<double> got = testing::ReadBack(ops.d->get(), ops.sd, cs.dtype);
  const double ours = testing::RelError(got, ops.ldd, exact, cs.n, cs.m, cs.n);
  const double lt = testing::RelError(testing::ReadBack(ops.ref->get(), ops.sd, cs.dtype), ops.ldd,
                                      exact, cs.n, cs.m, cs.n);
  GTEST_LOG_(INFO) << Name(cs) << ": " << err << " from cuBLASLt; from float64 ours " << ours
                   << ", cuBLASLt " << lt;
  if (ours <= std::max(Tolerance(cs.dtype), lt)) return ours;
  if (cs.m * cs.n >= 64) return err;
  // A dot product's rounding error scales with sum |a_k b_k|, not with |sum a_k b_k|: when the
  // sum nearly cancels, also accept an error within the tolerance of that magnitude. Wrong
  // k-slices or a missed tile stay far above it.
  for (uint16_t& v : a) v &= 0x7fff;
  for (uint16_t& v : b) v &= 0x7fff;
  for (double& v : c) v = std::abs(v);
  const std::vector<double> mag =
      testing::CpuGemm(a, ops.lda, b, ops.ldb, cs.layout, cs.beta != 0 ? &c : nullptr, ops.ldd,
                       cs.m, cs.n, cs.k, std::abs(cs.alpha), std::abs(cs.beta));
  double err2 = 0, mag2 = 0;
  for (int64_t r = 0; r < cs.m; ++r) {
    for (int64_t j = 0; j < cs.n; ++j) {
      const double e = got[r * ops.ldd + j] - exact[r * cs.n + j];
      err2 += e * e;
      mag2 += mag[r * cs.n + j] * mag[r * cs.n + j];
    }
  }
  const double scaled = mag2 > 0 ? std::sqrt(err2 / mag2) : ours;
  if (std::isfinite(scaled) && scaled <= Tolerance(cs.dtype)) return scaled;
  GTEST_LOG_(INFO) << Name(cs) << ": ours vs the magnitude of the terms " << scaled;
  return err;
}

// Runs `cs` through the SM90 kernel and cuBLASLt; returns the relative error (Float64Verdict
// where the FP32 results differ beyond the tolerance).
double Compare(const Case& cs) {
  Operands ops(cs);
  absl::Status st = RunKind(ops.Args(cs, ops.ref->get()), KernelKind::kCublasLt);
  EXPECT_TRUE(st.ok()) << Name(cs) << ": cuBLASLt: " << st;
  st = RunKind(ops.Args(cs, ops.d->get()), KernelKind::kSm90);
  EXPECT_TRUE(st.ok()) << Name(cs) << ": sm90: " << st;
  const double err = testing::DeviceRelError(ops.d->get(), ops.ref->get(), cs.dtype, cs.m, cs.n,
                                             ops.ldd, cs.batch, ops.sd);
  return Float64Verdict(ops, cs, err);
}

class Sm90Sweep : public ::testing::TestWithParam<std::tuple<BLayout, DType>> {};

TEST_P(Sm90Sweep, MatchesCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const auto [layout, dtype] = GetParam();
  // Full cube for two of the four (layout, dtype) pairs; the others skip the mixed 4096 cases.
  const bool full = (layout == BLayout::kNK) == (dtype == DType::kBF16);
  const std::vector<int64_t> sizes = {1, 7, 64, 127, 128, 129, 1000, 4096};
  int index = 0;
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) {
        const int big = (m == 4096) + (n == 4096) + (k == 4096);
        if (!full && big == 2) continue;
        Case cs{m, n, k, 1, layout, dtype};
        if (++index % 3 == 0) cs.alpha = 0.75f, cs.beta = -0.5f;
        const double err = Compare(cs);
        EXPECT_LE(err, Tolerance(dtype)) << Name(cs);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(LayoutsDtypes, Sm90Sweep,
                         ::testing::Combine(::testing::Values(BLayout::kNK, BLayout::kKN),
                                            ::testing::Values(DType::kBF16, DType::kFP32)));

// Small shapes that exercise every path (edges, both cluster sizes, both tile widths, C):
// the set compute-sanitizer runs on (--gtest_filter=Sm90Small.*).
TEST(Sm90Small, EdgesAndPaths) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const int64_t shapes[][3] = {
      {1, 1, 1},      {7, 129, 65},    {129, 7, 200}, {300, 264, 130},
      {257, 520, 64}, {300, 264, 1100}};  // the last one splits its tiles along K (18 tiles, 18 K
                                          // blocks)
  for (const auto& s : shapes) {
    for (BLayout layout : {BLayout::kNK, BLayout::kKN}) {
      for (DType dtype : {DType::kBF16, DType::kFP32}) {
        Case cs{s[0], s[1], s[2], 2, layout, dtype, 1.5f, 0.25f};
        EXPECT_LE(Compare(cs), Tolerance(dtype)) << Name(cs);
      }
    }
  }
}

// Every tile shape and cluster size, forced through the tuning hook (the heuristics pick only
// some of them for the shapes above).
TEST(Sm90Small, EveryTileShape) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const int tiles[][2] = {{128, 256}, {256, 128}, {128, 128}, {64, 256}, {64, 128}};
  // The last two give every CTA several tiles, with more K blocks than pipeline stages; the
  // one before splits its tiles along K.
  const int64_t shapes[][3] = {{7, 129, 65},     {300, 264, 130},   {513, 520, 200},
                               {300, 264, 1100}, {2304, 1024, 320}, {2304, 1024, 1100}};
  for (const auto& tile : tiles) {
    for (int cluster : {1, 2}) {
      sm90::TuningOverride o;
      o.block_m = tile[0], o.block_n = tile[1], o.cluster_m = cluster;
      sm90::SetTuningOverride(o);
      for (const auto& s : shapes) {
        for (BLayout layout : {BLayout::kNK, BLayout::kKN}) {
          for (DType dtype : {DType::kBF16, DType::kFP32}) {
            // beta != 0 with BF16 output on the odd-M shapes (C read while packing the
            // deferred BF16 store), always with FP32 output.
            const float beta = dtype == DType::kFP32 || s[0] % 2 == 1 ? 0.25f : 0.0f;
            Case cs{s[0], s[1], s[2], 2, layout, dtype, 1.5f, beta};
            EXPECT_LE(Compare(cs), Tolerance(dtype))
                << Name(cs) << " tile " << tile[0] << "x" << tile[1] << " cluster " << cluster;
          }
        }
      }
    }
  }
  sm90::ClearTuningOverride();
}

TEST(Sm90Batched, MatchesCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const Case cases[] = {{1000, 1000, 129, 5, BLayout::kNK, DType::kBF16},
                        {127, 4096, 64, 3, BLayout::kKN, DType::kFP32, 1.0f, 1.0f},
                        {512, 768, 1024, 8, BLayout::kKN, DType::kBF16, 0.5f, 2.0f},
                        {64, 128, 4096, 7, BLayout::kNK, DType::kFP32}};
  for (const Case& cs : cases) EXPECT_LE(Compare(cs), Tolerance(cs.dtype)) << Name(cs);
}

TEST(Sm90BenchmarkShapes, MatchesCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const Case cases[] = {{8192, 8192, 8192},
                        {2048, 2048, 2048, 1, BLayout::kKN},
                        {512, 28672, 8192},
                        {4096, 8192, 28672},
                        {8192, 8192, 8192, 1, BLayout::kKN, DType::kFP32}};
  for (const Case& cs : cases) EXPECT_LE(Compare(cs), Tolerance(cs.dtype)) << Name(cs);
}

// One shape in each measured coalesced-batch band of the heuristics (kShapeRules and SwapRule:
// M = 257-768), edges off the tiles (M, N, K not multiples of 128, 256, 64 where the band
// allows), both layouts, BF16 and FP32 output, alpha/beta: each runs the band's launch through
// the dispatch and matches cuBLASLt.
TEST(Sm90CoalescedBands, MatchCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const struct {
    Case cs;
    const char* launch;  // what the description must name
  } cases[] = {
      {{300, 4096, 4096}, "swap_ab tile=128x160 stages=5 cluster_m=1"},
      {{383, 14000, 4096, 1, BLayout::kKN, DType::kFP32, 0.5f, 1.0f},
       "swap_ab tile=128x192 stages=5 cluster_m=1"},
      // A width whose epilogue stages in the last pipeline slot (EpilogueInSlot), with more tiles
      // than SMs: each CTA holds and releases the slot once per tile.
      {{200, 28672, 4096, 1, BLayout::kNK, DType::kBF16, 1.0f, 0.5f},
       "swap_ab tile=128x208 stages=5"},
      // Plain 128x256 tiles where no swap-AB band applies (M = 481-512; four 128-row tiles or
      // N past four waves of four M tiles).
      {{500, 4000, 4096, 1, BLayout::kKN, DType::kBF16, 1.0f, -1.0f},
       "tile=128x256 stages=4 cluster_m=2"},
      {{640, 28672, 4096, 1, BLayout::kKN, DType::kFP32}, "tile=128x256 stages=4 cluster_m=1"},
      {{700, 28672, 4096, 1, BLayout::kNK, DType::kFP32}, "tile=128x256 stages=4 cluster_m=2"},
      {{600, 8000, 4160}, "swap_ab tile=128x160 stages=5 cluster_m=2"},
      {{700, 8192, 4096, 1, BLayout::kNK, DType::kFP32},
       "swap_ab tile=128x176 stages=5 cluster_m=2"},
  };
  for (const auto& c : cases) {
    EXPECT_LE(Compare(c.cs), Tolerance(c.cs.dtype)) << Name(c.cs);
    EXPECT_NE(sm90::LastLaunchDescription().find(c.launch), std::string::npos)
        << Name(c.cs) << ": " << sm90::LastLaunchDescription();
  }
}

// Every swap-AB width (TileConfig::swap_ab) and cluster size, forced through the tuning hook, in
// both B layouts: M not a multiple of the width (and below it), N not a multiple of 128, K not a
// multiple of 64, a 2-entry strided batch, BF16 and FP32 output with alpha/beta and C, and a
// shape whose last wave splits along K.
TEST(Sm90SwapAB, EveryWidthMatchesCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const int64_t shapes[][4] = {// m, n, k, batch
                               {17, 200, 72, 2},
                               {300, 264, 130, 2},
                               {520, 1000, 200, 1},
                               {272, 1024, 4096, 1}};  // 8 x 2-3 tiles: the tail splits along K
  for (int width : {144, 160, 176, 192, 208, 224, 240}) {
    for (int cluster : {1, 2}) {
      sm90::TuningOverride o;
      o.swap_ab = 1, o.block_m = 128, o.block_n = width, o.cluster_m = cluster;
      sm90::SetTuningOverride(o);
      for (const auto& s : shapes) {
        for (BLayout layout : {BLayout::kNK, BLayout::kKN}) {
          for (DType dtype : {DType::kBF16, DType::kFP32}) {
            const bool scaled = dtype == DType::kFP32 || s[0] % 2 == 1;
            const float alpha = scaled ? 1.5f : 1.0f, beta = scaled ? 0.25f : 0.0f;
            Case cs{s[0], s[1], s[2], s[3], layout, dtype, alpha, beta};
            EXPECT_LE(Compare(cs), Tolerance(dtype))
                << Name(cs) << " swap width " << width << " cluster " << cluster;
            EXPECT_NE(sm90::LastLaunchDescription().find(absl::StrCat("swap_ab tile=128x", width)),
                      std::string::npos)
                << sm90::LastLaunchDescription();
          }
        }
      }
    }
  }
  sm90::ClearTuningOverride();
}

// The heuristics' own choices for coalesced decode batches over a resident weight (M = 100-700,
// swap-AB from 129 rows), through the dispatch, match cuBLASLt.
TEST(Sm90SwapAB, CoalescedBatchesMatchCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const Case cases[] = {{100, 8192, 8192},
                        {160, 4096, 14336, 1, BLayout::kNK, DType::kFP32},
                        {272, 8192, 8192, 1, BLayout::kNK, DType::kBF16, 0.5f, 1.0f},
                        {333, 28672, 8192},
                        {448, 14336, 4096},
                        {200, 8192, 8192, 1, BLayout::kKN},
                        {420, 4096, 14336, 1, BLayout::kKN, DType::kFP32, 2.0f, 0.5f},
                        {700, 8192, 4096, 1, BLayout::kNK, DType::kFP32, 1.0f, -1.0f}};
  for (const Case& cs : cases) {
    EXPECT_LE(Compare(cs), Tolerance(cs.dtype))
        << Name(cs) << ": " << sm90::LastLaunchDescription();
    GTEST_LOG_(INFO) << Name(cs) << ": " << sm90::LastLaunchDescription();
  }
}

// Above the coalesced-batch bands, the swap-AB tiles LargeMSwapRule picks (M, N off the tiles;
// both layouts, FP32 with beta): each launch must be the swap-AB tile and match cuBLASLt.
TEST(Sm90SwapAB, LargeMRuleMatchesCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const Case cases[] = {{1536, 4096, 14336},
                        {1376, 4096, 8192, 1, BLayout::kKN, DType::kFP32, 0.5f, 1.0f},
                        {1101, 2000, 4160, 1, BLayout::kNK, DType::kBF16, 1.0f, -1.0f}};
  for (const Case& cs : cases) {
    EXPECT_LE(Compare(cs), Tolerance(cs.dtype))
        << Name(cs) << ": " << sm90::LastLaunchDescription();
    EXPECT_NE(sm90::LastLaunchDescription().find("swap_ab"), std::string::npos)
        << Name(cs) << ": " << sm90::LastLaunchDescription();
  }
}

// Shapes whose last wave is split along K (sm90_split.h): decode-like M with few tiles, a 3.4-wave
// shape, FP32 + beta, batched. Each must really split (the launch description says so), and a
// workspace reused by the next launch (stale flags of an earlier epoch) must not be trusted.
// Runs `cs` through sm90::Gemm (the SM90 kernel directly: the dispatch sends M <= 16 to the
// small-M kernel) twice with the workspace it asks for, garbage filled (the second run finds the
// first run's flags); each run's launch must name `want_split` and match cuBLASLt.
void CheckSplitRuns(const Case& cs, const std::string& want_split) {
  Operands ops(cs);
  ASSERT_TRUE(RunKind(ops.Args(cs, ops.ref->get()), KernelKind::kCublasLt).ok());
  const StridedBatch args = ops.Args(cs, ops.d->get());
  const std::size_t ws = sm90::WorkspaceBytes(args);
  ASSERT_GT(ws, 0u) << Name(cs);
  DeviceBuffer work(ws);
  cudaMemset(work.get(), 0xff, ws);  // garbage flags and partials
  LaunchOptions opts;
  opts.kind = KernelKind::kSm90;
  opts.workspace = work.get();
  opts.workspace_bytes = ws;
  for (int run = 0; run < 2; ++run) {
    cudaMemset(ops.d->get(), 0xff, ops.d->bytes());
    ASSERT_TRUE(sm90::Gemm(args, nullptr, opts).ok()) << Name(cs);
    EXPECT_NE(sm90::LastLaunchDescription().find(want_split), std::string::npos)
        << Name(cs) << ": " << sm90::LastLaunchDescription();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << Name(cs);
    const double err = testing::DeviceRelError(ops.d->get(), ops.ref->get(), cs.dtype, cs.m, cs.n,
                                               ops.ldd, cs.batch, ops.sd);
    EXPECT_LE(Float64Verdict(ops, cs, err), Tolerance(cs.dtype)) << Name(cs) << " run " << run;
  }
}

TEST(Sm90SplitK, MatchesCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const Case cases[] = {{128, 8192, 8192},
                        {128, 8192, 8192, 1, BLayout::kKN, DType::kFP32, 0.5f, 1.0f},
                        {100, 4096, 2048, 1, BLayout::kKN, DType::kBF16, 1.0f, -1.0f},
                        {129, 1000, 4096, 1, BLayout::kNK, DType::kFP32},
                        {512, 28672, 2048},
                        {64, 2048, 4096, 3, BLayout::kNK, DType::kBF16, 2.0f, 0.5f}};
  for (const Case& cs : cases) CheckSplitRuns(cs, "split_k=");
}

// Forced tail split factors (TileConfig::tail_splits through the tuning hook) with every tile
// and cluster size: M in the coalesced-batch band with fewer tiles than SMs, and a tail of 24
// tiles cut into more units than there are SMs.
TEST(Sm90SplitK, ForcedFactorsMatchCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const Case cases[] = {{272, 1024, 4096},
                        {272, 1024, 4096, 1, BLayout::kKN, DType::kFP32, 0.5f, 1.0f},
                        {2304, 1024, 1100, 2, BLayout::kNK, DType::kBF16, 1.0f, -1.0f}};
  const int tiles[][2] = {{128, 256}, {256, 128}, {128, 128}, {64, 256}, {64, 128}};
  for (const auto& tile : tiles) {
    for (int cluster : {1, 2}) {
      for (int splits : {2, 3, 8}) {
        sm90::TuningOverride o;
        o.block_m = tile[0], o.block_n = tile[1], o.cluster_m = cluster, o.tail_splits = splits;
        sm90::SetTuningOverride(o);
        for (const Case& cs : cases) {
          SCOPED_TRACE(::testing::Message() << "tile " << tile[0] << "x" << tile[1] << " cluster "
                                            << cluster << " splits " << splits);
          CheckSplitRuns(cs, absl::StrCat("split_k=", splits));
        }
      }
    }
  }
  sm90::ClearTuningOverride();
}

// The heuristics' stream-K launches (StreamKRule: one tile along M, 1.70 waves of tiles along
// N = 28672), swap-AB and plain, FP32 with beta, both layouts, on a reused garbage workspace.
TEST(Sm90StreamK, MatchesCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  // One tile column (the first three), then several plain tiles along M (StreamKRule).
  const Case cases[] = {{192, 28672, 8192},
                        {240, 28672, 8192, 1, BLayout::kKN, DType::kFP32, 0.5f, 1.0f},
                        {256, 28672, 8192, 1, BLayout::kNK, DType::kBF16, 1.0f, -1.0f},
                        {512, 14336, 4096},
                        {1600, 6144, 4096, 1, BLayout::kKN, DType::kFP32, 0.5f, 1.0f},
                        {1580, 6100, 4100, 1, BLayout::kNK, DType::kBF16, 1.0f, -1.0f}};
  for (const Case& cs : cases) CheckSplitRuns(cs, "stream_k");
}

// Stream-K over the last partial wave (TileConfig::tail_splits = kStreamKSplits through the
// tuning hook) with every plain tile, three swap-AB widths and both cluster sizes: few tiles with
// a long K (each tile shared by about ten clusters, whose owner adds their partials), and a
// batched shape with M, N and K off the tiles and a tail of 12-120 tiles over one to three
// shares each; FP32 with beta, both layouts.
TEST(Sm90StreamK, EveryTileMatchesCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const Case cases[] = {{272, 1024, 8192},
                        {272, 1024, 8192, 1, BLayout::kKN, DType::kFP32, 0.5f, 1.0f},
                        {1000, 3000, 2100, 2, BLayout::kNK, DType::kBF16, 1.0f, -1.0f}};
  const int tiles[][3] = {// block_m, block_n, swap-AB
                          {128, 256, 0}, {256, 128, 0}, {128, 128, 0}, {64, 256, 0},
                          {64, 128, 0},  {128, 144, 1}, {128, 208, 1}, {128, 240, 1}};
  for (const auto& tile : tiles) {
    for (int cluster : {1, 2}) {
      sm90::TuningOverride o;
      o.block_m = tile[0], o.block_n = tile[1], o.swap_ab = tile[2] ? 1 : -1;
      o.cluster_m = cluster, o.tail_splits = sm90::kStreamKSplits;
      sm90::SetTuningOverride(o);
      for (const Case& cs : cases) {
        SCOPED_TRACE(::testing::Message() << (tile[2] ? "swap " : "") << "tile " << tile[0] << "x"
                                          << tile[1] << " cluster " << cluster);
        CheckSplitRuns(cs, "stream_k");
      }
    }
  }
  sm90::ClearTuningOverride();
}

// Prepared calls (kernel::Prepare, then kernel::Launch) on one split workspace, garbage filled:
// launched in the other order than they were prepared, and one of them again, each launch must
// match cuBLASLt (the split's epoch is taken at launch, so a reused preparation never trusts its
// own earlier flags). A call whose variant is not qualified is served by cuBLASLt and says so.
TEST(Sm90Prepared, LaunchInAnyOrderAndAgain) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const Case cases[] = {{128, 8192, 8192}, {256, 8192, 8192}};
  std::vector<std::unique_ptr<Operands>> ops;
  std::size_t ws = 0;
  for (const Case& cs : cases) {
    ops.push_back(std::make_unique<Operands>(cs));
    ASSERT_TRUE(RunKind(ops.back()->Args(cs, ops.back()->ref->get()), KernelKind::kCublasLt).ok());
    ws =
        std::max(ws, WorkspaceBytes(ops.back()->Args(cs, ops.back()->d->get()), KernelKind::kAuto));
  }
  DeviceBuffer work(ws);
  cudaMemset(work.get(), 0xff, ws);
  std::vector<PreparedGemm> calls;
  KernelKind served[2] = {KernelKind::kAuto, KernelKind::kAuto};  // valid until the launches
  for (size_t i = 0; i < 2; ++i) {
    LaunchOptions opts;
    opts.workspace = work.get(), opts.workspace_bytes = ws, opts.served = &served[i];
    absl::StatusOr<PreparedGemm> call = Prepare(ops[i]->Args(cases[i], ops[i]->d->get()), opts);
    ASSERT_TRUE(call.ok()) << Name(cases[i]) << ": " << call.status();
    EXPECT_EQ(call->served(), KernelKind::kSm90);
    EXPECT_EQ(served[i], KernelKind::kSm90);
    EXPECT_NE(sm90::LastLaunchDescription().find("split_k="), std::string::npos)
        << Name(cases[i]) << ": " << sm90::LastLaunchDescription();
    calls.push_back(std::move(*call));
  }
  auto check = [&](size_t i, const char* when) {
    const Case& cs = cases[i];
    const double err = testing::DeviceRelError(ops[i]->d->get(), ops[i]->ref->get(), cs.dtype, cs.m,
                                               cs.n, ops[i]->ldd, cs.batch, ops[i]->sd);
    EXPECT_LE(err, Tolerance(cs.dtype)) << Name(cs) << " " << when;
  };
  ASSERT_TRUE(Launch(calls[1], nullptr).ok());
  ASSERT_TRUE(Launch(calls[0], nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  check(0, "launched second");
  check(1, "launched first");
  cudaMemset(ops[0]->d->get(), 0xff, ops[0]->d->bytes());
  ASSERT_TRUE(Launch(calls[0], nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  check(0, "launched again");

  LaunchOptions none;
  KernelKind fallback_served = KernelKind::kSm90;
  none.usable_variants = 0, none.served = &fallback_served;
  cudaMemset(ops[0]->d->get(), 0xff, ops[0]->d->bytes());
  absl::StatusOr<PreparedGemm> fallback = Prepare(ops[0]->Args(cases[0], ops[0]->d->get()), none);
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ(fallback->served(), KernelKind::kCublasLt);
  EXPECT_EQ(fallback_served, KernelKind::kCublasLt);
  ASSERT_TRUE(Launch(*fallback, nullptr).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  check(0, "through cuBLASLt");
}

// Runs `cases` as one group through GemmGrouped (kSm90, with the workspace it asks for, garbage
// filled, twice: the second run finds the first run's split flags) and a loop of cuBLASLt calls,
// and checks every member; `what` names the group in failures. Returns the last launch's
// description.
std::string CheckGroup(const std::vector<Case>& cases, const std::string& what) {
  std::vector<std::unique_ptr<Operands>> ops;
  std::vector<Problem> ours, refs;
  for (const Case& cs : cases) {
    ops.push_back(std::make_unique<Operands>(cs));
    ours.push_back(ops.back()->Args(cs, ops.back()->d->get()).problem);
    refs.push_back(ops.back()->Args(cs, ops.back()->ref->get()).problem);
  }
  LaunchOptions lt;
  lt.kind = KernelKind::kCublasLt;
  EXPECT_TRUE(GemmGrouped(refs, nullptr, lt).ok()) << what;
  LaunchOptions sm;
  sm.kind = KernelKind::kSm90;
  const std::size_t ws = WorkspaceBytes(ours, KernelKind::kSm90);
  DeviceBuffer work(std::max<std::size_t>(ws, 1));
  cudaMemset(work.get(), 0xff, work.bytes());
  sm.workspace = ws > 0 ? work.get() : nullptr;
  sm.workspace_bytes = ws;
  std::string launch;
  for (int run = 0; run < 2; ++run) {
    for (auto& op : ops) cudaMemset(op->d->get(), 0xff, op->d->bytes());
    absl::Status st = GemmGrouped(ours, nullptr, sm);
    EXPECT_TRUE(st.ok()) << what << ": " << st;
    launch = sm90::LastLaunchDescription();
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const double err = Float64Verdict(
          *ops[i], cases[i],
          testing::DeviceRelError(ops[i]->d->get(), ops[i]->ref->get(), cases[i].dtype, cases[i].m,
                                  cases[i].n, ops[i]->ldd, 1, ops[i]->sd));
      EXPECT_LE(err, Tolerance(cases[i].dtype)) << what << ", run " << run << ", group member " << i
                                                << ": " << Name(cases[i]) << " (" << launch << ")";
    }
  }
  return launch;
}

// Groups of different shapes (more than one launch's worth) against a loop of cuBLASLt calls.
TEST(Sm90Grouped, MatchesCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  std::mt19937_64 rng(FreshSeed());
  for (BLayout layout : {BLayout::kNK, BLayout::kKN}) {
    for (DType dtype : {DType::kBF16, DType::kFP32}) {
      std::vector<Case> cases;
      const int64_t dims[] = {1, 7, 64, 127, 128, 129, 300, 1000, 2048};
      for (int i = 0; i < 21; ++i) {
        Case cs{dims[rng() % 9], dims[rng() % 9], dims[rng() % 9], 1, layout, dtype};
        if (i % 2) cs.alpha = 2.0f, cs.beta = 0.5f;
        cases.push_back(cs);
      }
      CheckGroup(cases, "random group");
    }
  }
}

// Mixture-of-experts decode groups (every member within one 64-row tile): the 64-row tiles,
// A loads that stop at each member's M, and the same members under every other tile and cluster
// (members below one A box skip the loads of a 2-CTA cluster's second CTA).
TEST(Sm90Grouped, DecodeMembersMatchCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  std::mt19937_64 rng(FreshSeed());
  const int64_t ms[] = {1, 2, 7, 16, 33, 63, 64};
  // NOTE: N >= 8 here (Sm90Grouped.MatchesCublasLt covers N = 1 with K <= 2048). With N = 1 and
  // K = 4096 a member's whole FP32 output is M dot products, and the order of FP32 accumulation
  // alone (ours against cuBLASLt) put M = 2 of them 1.4e-5 apart, relative (H200): noise of two
  // numbers, not a fault, but over the 1e-5 bar.
  const int64_t ns[] = {8, 100, 128, 1000, 4096};
  const int64_t ks[] = {7, 64, 1000, 4096};
  struct Forced {
    int block_m, block_n, cluster_m;
  };
  const Forced forced[] = {{0, 0, 0}, {64, 256, 1}, {128, 128, 2}, {128, 256, 2}, {128, 128, 1}};
  for (BLayout layout : {BLayout::kNK, BLayout::kKN}) {
    for (DType dtype : {DType::kBF16, DType::kFP32}) {
      std::vector<Case> cases;
      for (int i = 0; i < 12; ++i) {
        Case cs{ms[rng() % 7], ns[rng() % 5], ks[rng() % 4], 1, layout, dtype};
        if (i % 3 == 1) cs.alpha = 2.0f, cs.beta = 0.5f;
        cases.push_back(cs);
      }
      for (const Forced& f : forced) {
        if (f.block_m > 0) {
          sm90::TuningOverride o;
          o.block_m = f.block_m, o.block_n = f.block_n, o.cluster_m = f.cluster_m;
          sm90::SetTuningOverride(o);
        }
        const std::string launch = CheckGroup(
            cases, absl::StrCat("forced ", f.block_m, "x", f.block_n, " cluster ", f.cluster_m));
        if (f.block_m == 0) EXPECT_NE(launch.find("tile=64x"), std::string::npos) << launch;
        sm90::ClearTuningOverride();
      }
    }
  }
}

// Groups of fewer tiles than SMs split their tiles along K (planned with the shortest member's
// K; each member splits its own K), through a workspace filled with garbage.
TEST(Sm90Grouped, TailSplitMatchesCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  for (BLayout layout : {BLayout::kNK, BLayout::kKN}) {
    for (DType dtype : {DType::kBF16, DType::kFP32}) {
      // Two experts of one token (batch-1 decode of a down projection): 64 tiles of 64x128.
      std::vector<Case> experts(2, Case{1, 4096, 14336, 1, layout, dtype});
      std::string launch = CheckGroup(experts, "two experts");
      EXPECT_NE(launch.find("split_k="), std::string::npos) << launch;
      // Members of different K, edges in every dimension, alpha and beta, 128-row tiles.
      std::vector<Case> mixed = {{100, 1000, 5000, 1, layout, dtype},
                                 {7, 300, 1030, 1, layout, dtype, 2.0f, 0.5f},
                                 {129, 129, 2047, 1, layout, dtype},
                                 {1, 4096, 1024, 1, layout, dtype}};
      launch = CheckGroup(mixed, "mixed K");
      EXPECT_NE(launch.find("split_k="), std::string::npos) << launch;
    }
  }
}

TEST(Sm90Dispatch, UnalignedPitchFallsBack) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  Case cs{100, 30, 33, 1, BLayout::kNK, DType::kBF16};
  Operands ops(cs);
  StridedBatch args = ops.Args(cs, ops.d->get());
  args.problem.lda = 33, args.problem.ldb = 33;  // 66-byte pitches: not TMA-compatible
  LaunchOptions sm;
  sm.kind = KernelKind::kSm90;
  EXPECT_TRUE(absl::IsFailedPrecondition(Gemm(args, nullptr, sm)));
  EXPECT_TRUE(RunKind(args, KernelKind::kAuto).ok());  // kAuto routes it to cuBLASLt
}

// A variant outside LaunchOptions::usable_variants never runs: an explicit kSm90 call is refused
// with UNIMPLEMENTED, kAuto serves it through cuBLASLt (correct numbers); the small-M kernel and
// each tile variant have their own bit (sm90/sm90_variant.h, gemm/qualification.h).
TEST(Sm90Dispatch, UnqualifiedVariantsAreRefusedOrServedThroughCublasLt) {
  if (!IsSm90()) GTEST_SKIP() << "needs compute capability 9.0";
  const std::vector<std::string> names = NativeVariantNames(KernelKind::kSm90);
  ASSERT_EQ(names.size(), 13u);  // 5 tiles, the small-M kernel, 7 swap-AB widths
  for (const Case& cs : {Case{8, 512, 256, 1, BLayout::kKN, DType::kBF16},       // small-M
                         Case{256, 512, 384, 1, BLayout::kNK, DType::kBF16}}) {  // a WGMMA tile
    SCOPED_TRACE(Name(cs));
    Operands ops(cs);
    ASSERT_TRUE(RunKind(ops.Args(cs, ops.ref->get()), KernelKind::kCublasLt).ok());
    const StridedBatch args = ops.Args(cs, ops.d->get());
    LaunchOptions none;
    none.kind = KernelKind::kSm90;
    none.usable_variants = 0;
    DeviceBuffer work(WorkspaceBytes(args, KernelKind::kSm90) + 1);
    none.workspace = work.get();
    none.workspace_bytes = work.bytes();
    const absl::Status refused = Gemm(args, nullptr, none);
    EXPECT_TRUE(absl::IsUnimplemented(refused)) << refused;
    none.kind = KernelKind::kAuto;
    ASSERT_TRUE(Gemm(args, nullptr, none).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_LE(testing::DeviceRelError(ops.d->get(), ops.ref->get(), cs.dtype, cs.m, cs.n, ops.ldd,
                                      cs.batch, ops.sd),
              Tolerance(cs.dtype));
  }
}

}  // namespace
}  // namespace gemm::kernel
