// Correctness of the SM100 tcgen05 kernel (KernelKind::kSm100) against cuBLASLt on the same
// inputs: both B layouts, BF16/FP32 output, alpha/beta, ragged M/N/K, the small-M swap-AB
// variant (with split-K when given a workspace), strided batches and groups, the 2-M-wave wide
// variant and the Cluster Launch Control scheduler (switched through GEMM_SM100_M_WAVES and
// GEMM_SM100_CLC, read by the launcher on every call). Runs only on compute
// capability 10.x (GB200/B200); elsewhere the kernel tests skip with a reason and the dispatch test
// checks that kAuto never picks the SM100 kernel and that asking for it fails cleanly.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gemm/kernel.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace gemm::kernel {
namespace {

using testing::ComputeCapability;
using testing::DeviceBuffer;
using testing::HaveGpu;
using testing::Pitch;
using testing::RandomBf16;
using testing::ReadBack;
using testing::RelError;

// Skips unless device 0 is a Blackwell datacenter GPU (compute capability 10.x).
#define SKIP_UNLESS_SM100()                                                                   \
  do {                                                                                        \
    if (!HaveGpu()) GTEST_SKIP() << "no GPU";                                                 \
    const int cc = ComputeCapability();                                                       \
    if (cc / 10 != 10) {                                                                      \
      GTEST_SKIP() << "SM100 kernel needs compute capability 10.x (GB200/B200); device 0 is " \
                   << cc / 10 << "." << cc % 10;                                              \
    }                                                                                         \
  } while (0)

struct Case {
  int64_t m, n, k;
  BLayout layout;
  DType out;
  float alpha = 1.0f;
  float beta = 0.0f;
  int64_t batch = 1;
  bool clc = false;  // GEMM_SM100_CLC=1: Cluster Launch Control scheduler
  int waves = 0;     // GEMM_SM100_M_WAVES: force 1 or 2 M-waves (0: the heuristic)
};

std::string Name(const Case& c) {
  return std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
         (c.layout == BLayout::kKN ? "_kn" : "_nk") + (c.out == DType::kFP32 ? "_f32" : "_bf16") +
         (c.beta != 0 ? "_beta" : "") + (c.batch > 1 ? "_b" + std::to_string(c.batch) : "") +
         (c.clc ? "_clc" : "") + (c.waves != 0 ? "_w" + std::to_string(c.waves) : "");
}

// Sets the SM100 launcher's environment switches for one test and restores them after.
class TuningEnv {
 public:
  TuningEnv(bool clc, int waves) {
    if (clc) setenv("GEMM_SM100_CLC", "1", 1);
    if (waves != 0) setenv("GEMM_SM100_M_WAVES", std::to_string(waves).c_str(), 1);
  }
  ~TuningEnv() {
    unsetenv("GEMM_SM100_CLC");
    unsetenv("GEMM_SM100_M_WAVES");
  }
};

// Device operands of one strided batch (dense pitches rounded to 16 bytes).
struct Operands {
  Problem p;
  int64_t stride_a = 0, stride_b = 0, stride_cd = 0;
  std::unique_ptr<DeviceBuffer> a, b, c, d_sm100, d_ref;
};

Operands Make(const Case& cs, std::mt19937_64& rng) {
  Operands o;
  Problem& p = o.p;
  p.m = cs.m;
  p.n = cs.n;
  p.k = cs.k;
  p.b_layout = cs.layout;
  p.d_dtype = cs.out;
  p.alpha = cs.alpha;
  p.beta = cs.beta;
  const std::size_t es = DTypeSize(cs.out);
  p.lda = Pitch(cs.k, 2);
  p.ldb = cs.layout == BLayout::kKN ? Pitch(cs.n, 2) : Pitch(cs.k, 2);
  p.ldc = p.ldd = Pitch(cs.n, es);
  o.stride_a = p.lda * cs.m;
  o.stride_b = p.ldb * (cs.layout == BLayout::kKN ? cs.k : cs.n);
  o.stride_cd = p.ldd * cs.m;
  const auto ha = RandomBf16(o.stride_a * cs.batch, rng);
  const auto hb = RandomBf16(o.stride_b * cs.batch, rng);
  o.a = std::make_unique<DeviceBuffer>(ha.size() * 2);
  o.b = std::make_unique<DeviceBuffer>(hb.size() * 2);
  cudaMemcpy(o.a->get(), ha.data(), ha.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(o.b->get(), hb.data(), hb.size() * 2, cudaMemcpyHostToDevice);
  const std::size_t d_bytes = o.stride_cd * cs.batch * es;
  o.d_sm100 = std::make_unique<DeviceBuffer>(d_bytes);
  o.d_ref = std::make_unique<DeviceBuffer>(d_bytes);
  cudaMemset(o.d_sm100->get(), 0xFF, d_bytes);  // NaN poison: unwritten outputs fail
  cudaMemset(o.d_ref->get(), 0, d_bytes);
  if (cs.beta != 0.0f) {
    o.c = std::make_unique<DeviceBuffer>(d_bytes);
    if (cs.out == DType::kBF16) {
      const auto hc = RandomBf16(d_bytes / 2, rng);
      cudaMemcpy(o.c->get(), hc.data(), d_bytes, cudaMemcpyHostToDevice);
    } else {
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<float> hc(d_bytes / 4);
      for (auto& x : hc) x = dist(rng);
      cudaMemcpy(o.c->get(), hc.data(), d_bytes, cudaMemcpyHostToDevice);
    }
    p.c = o.c->get();
  }
  p.a = o.a->get();
  p.b = o.b->get();
  return o;
}

StridedBatch BatchOf(const Operands& o, int64_t batch, void* d) {
  StridedBatch sb;
  sb.problem = o.p;
  sb.problem.d = d;
  sb.batch = batch;
  sb.stride_a = o.stride_a;
  sb.stride_b = o.stride_b;
  sb.stride_c = o.stride_cd;
  sb.stride_d = o.stride_cd;
  return sb;
}

double Tolerance(DType out) { return out == DType::kFP32 ? 1e-4 : 1e-2; }

class Sm100VsCublasLt : public ::testing::TestWithParam<Case> {};

TEST_P(Sm100VsCublasLt, Matches) {
  SKIP_UNLESS_SM100();
  const Case cs = GetParam();
  const TuningEnv env(cs.clc, cs.waves);
  std::mt19937_64 rng(42);
  Operands o = Make(cs, rng);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  LaunchOptions sm100;
  sm100.kind = KernelKind::kSm100;
  LaunchOptions ref;
  ref.kind = KernelKind::kCublasLt;
  const StridedBatch got_args = BatchOf(o, cs.batch, o.d_sm100->get());
  const StridedBatch ref_args = BatchOf(o, cs.batch, o.d_ref->get());
  // The small-M kernel splits K into the workspace when it has one (decode shapes).
  DeviceBuffer ws_sm100(WorkspaceBytes(got_args, KernelKind::kSm100));
  sm100.workspace = ws_sm100.get();
  sm100.workspace_bytes = ws_sm100.bytes();
  DeviceBuffer ws_ref(WorkspaceBytes(ref_args, KernelKind::kCublasLt));
  ref.workspace = ws_ref.get();
  ref.workspace_bytes = ws_ref.bytes();
  ASSERT_TRUE(Gemm(got_args, stream, sm100).ok());
  ASSERT_TRUE(Gemm(ref_args, stream, ref).ok());
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  const std::size_t count = o.stride_cd * cs.batch;
  const auto got = ReadBack(o.d_sm100->get(), count, cs.out);
  const auto want = ReadBack(o.d_ref->get(), count, cs.out);
  for (int64_t b = 0; b < cs.batch; ++b) {
    const std::vector<double> g(got.begin() + b * o.stride_cd, got.begin() + (b + 1) * o.stride_cd);
    const std::vector<double> w(want.begin() + b * o.stride_cd,
                                want.begin() + (b + 1) * o.stride_cd);
    EXPECT_LT(RelError(g, o.p.ldd, w, o.p.ldd, cs.m, cs.n), Tolerance(cs.out)) << "batch " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, Sm100VsCublasLt,
    ::testing::Values(
        // Wide kernel: exact tiles, ragged edges, K not a multiple of 64, both layouts.
        Case{256, 256, 64, BLayout::kNK, DType::kBF16},
        Case{512, 512, 512, BLayout::kKN, DType::kBF16},
        Case{1000, 520, 136, BLayout::kNK, DType::kBF16},
        Case{1000, 520, 136, BLayout::kKN, DType::kFP32, 0.5f, 1.0f},
        Case{777, 1111, 1000, BLayout::kNK, DType::kFP32},
        Case{4096, 4096, 4096, BLayout::kNK, DType::kBF16},
        Case{8192, 8192, 8192, BLayout::kKN, DType::kBF16},
        Case{300, 4000, 72, BLayout::kKN, DType::kBF16, 1.0f, -2.0f},
        // Small-M swap-AB kernel (M <= 128).
        Case{1, 4096, 4096, BLayout::kNK, DType::kBF16},
        Case{16, 4096, 4096, BLayout::kKN, DType::kBF16},
        Case{128, 1000, 520, BLayout::kNK, DType::kFP32, 2.0f, 0.5f},
        Case{77, 333, 8, BLayout::kKN, DType::kBF16},
        // Split-K (decode, long K) with alpha/beta and FP32 output.
        Case{8, 8192, 8192, BLayout::kNK, DType::kBF16, 0.5f, 1.0f},
        Case{32, 2048, 14336, BLayout::kKN, DType::kFP32},
        // Strided batches (batch = third TMA dimension).
        Case{320, 1024, 1024, BLayout::kNK, DType::kBF16, 1.0f, 0.0f, 3},
        Case{64, 512, 256, BLayout::kKN, DType::kFP32, 1.0f, 1.0f, 4},
        // Two M-waves (512 x 256 cluster tiles, one TMEM accumulator), forced on small and
        // ragged shapes; 8192^3 and 4096^3 above take them through the heuristic.
        Case{1000, 520, 136, BLayout::kNK, DType::kBF16, 1.0f, 0.0f, 1, false, 2},
        Case{777, 1111, 1000, BLayout::kKN, DType::kFP32, 0.5f, 1.0f, 1, false, 2},
        Case{513, 256, 64, BLayout::kNK, DType::kBF16, 1.0f, 0.0f, 1, false, 2},
        Case{320, 1024, 1024, BLayout::kKN, DType::kBF16, 1.0f, 0.0f, 3, false, 2},
        Case{2048, 2048, 2048, BLayout::kNK, DType::kBF16, 1.0f, 0.0f, 1, false, 1},
        // Cluster Launch Control scheduler (grid = one cluster per tile).
        Case{1000, 520, 136, BLayout::kNK, DType::kBF16, 1.0f, 0.0f, 1, true},
        Case{4096, 4096, 4096, BLayout::kKN, DType::kBF16, 1.0f, 0.0f, 1, true, 1},
        Case{8192, 8192, 8192, BLayout::kNK, DType::kBF16, 1.0f, 0.0f, 1, true, 2},
        Case{8, 8192, 8192, BLayout::kNK, DType::kBF16, 0.5f, 1.0f, 1, true},  // + split-K
        Case{77, 333, 8, BLayout::kKN, DType::kBF16, 1.0f, 0.0f, 1, true},
        Case{320, 1024, 1024, BLayout::kNK, DType::kFP32, 1.0f, 1.0f, 3, true}),
    [](const ::testing::TestParamInfo<Case>& info) { return Name(info.param); });

class Sm100Grouped : public ::testing::TestWithParam<bool> {};  // param: CLC on

TEST_P(Sm100Grouped, MatchesCublasLtPerProblem) {
  SKIP_UNLESS_SM100();
  const TuningEnv env(GetParam(), 0);
  std::mt19937_64 rng(7);
  const std::vector<Case> cases = {{128, 256, 512, BLayout::kNK, DType::kBF16},
                                   {64, 128, 256, BLayout::kNK, DType::kBF16},
                                   {300, 200, 104, BLayout::kNK, DType::kBF16, 1.0f, 1.0f},
                                   {2048, 1024, 777, BLayout::kNK, DType::kBF16}};
  std::vector<Operands> ops;
  std::vector<Problem> group;
  for (const Case& c : cases) {
    ops.push_back(Make(c, rng));
    Problem p = ops.back().p;
    p.d = ops.back().d_sm100->get();
    group.push_back(p);
  }
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  LaunchOptions sm100;
  sm100.kind = KernelKind::kSm100;
  DeviceBuffer ws(WorkspaceBytes(group, KernelKind::kSm100));
  sm100.workspace = ws.get();
  sm100.workspace_bytes = ws.bytes();
  ASSERT_TRUE(GemmGrouped(group, stream, sm100).ok());
  LaunchOptions ref;
  ref.kind = KernelKind::kCublasLt;
  for (const Operands& o : ops) {
    ASSERT_TRUE(Gemm(BatchOf(o, 1, o.d_ref->get()), stream, ref).ok());
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& o = ops[i];
    const auto got = ReadBack(o.d_sm100->get(), o.stride_cd, o.p.d_dtype);
    const auto want = ReadBack(o.d_ref->get(), o.stride_cd, o.p.d_dtype);
    EXPECT_LT(RelError(got, o.p.ldd, want, o.p.ldd, o.p.m, o.p.n), 1e-2) << "problem " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Scheduler, Sm100Grouped, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "Clc" : "Static");
                         });

// Runs on every GPU: the dispatch picks SM100 only on compute capability 10.0, and asking for it
// elsewhere fails with FAILED_PRECONDITION instead of launching sm_100a code.
TEST(Sm100Dispatch, SelectedOnlyOnComputeCapability100) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU";
  const int cc = ComputeCapability();
  auto kind = SelectKernel(0);
  ASSERT_TRUE(kind.ok()) << kind.status();
  if (cc == 100) {
    EXPECT_EQ(*kind, KernelKind::kSm100);
    return;
  }
  EXPECT_NE(*kind, KernelKind::kSm100) << "device is " << cc / 10 << "." << cc % 10;
  std::mt19937_64 rng(1);
  Operands o = Make(Case{256, 256, 64, BLayout::kNK, DType::kBF16}, rng);
  LaunchOptions sm100;
  sm100.kind = KernelKind::kSm100;
  const absl::Status st = Gemm(BatchOf(o, 1, o.d_sm100->get()), nullptr, sm100);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
}

}  // namespace
}  // namespace gemm::kernel
